total = first + \
    second + \
    third
if a and \
        b:
    pass
assert rows % 128 == 0, \
    "rows must be a multiple of 128"
tile = nl.ndarray((128,
                   512),
                  nl.float32,
    buffer=nl.sbuf)
items = [
    1,  # comment
    # comment-only line

    2,
]
config = {
    "a": 1,
        "b": [
    2, 3],
}
call(a,
b)
x = (1 +
     2) * \
    3
