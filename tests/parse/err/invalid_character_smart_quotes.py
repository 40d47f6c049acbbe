import nki.language as nl


def make(shape):
    return nl.ndarray(shape, nl.float32, buffer=nl.sbuf, name=“scratch”)
