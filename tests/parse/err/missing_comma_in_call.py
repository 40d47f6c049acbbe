import nki.language as nl


def alloc(shape):
    return nl.ndarray(shape nl.float32, buffer=nl.sbuf)
