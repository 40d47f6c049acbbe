import nki.language as nl


def alloc():
    return nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf,, name="t")
