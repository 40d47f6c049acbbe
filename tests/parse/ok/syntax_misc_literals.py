payload = b"\x00\x01raw bytes"
raw_bytes = rb"\d+"
upper_bytes = B'ABC'
imaginary = 2j
complex_value = 1.5 + 0.5J
exponent_imag = 1e-3j
debug_field = f"{rows=} {cols = } {ratio=:.2f} {name=!r}"


def positional_only(tensor, shape, /, dtype=None, *, buffer=None):
    return tensor


def only_positional(a, b, /):
    return a + b
