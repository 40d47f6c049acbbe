counter = 0


def bump():
    global counter
    counter += 1


def make_counter():
    count = 0

    def step():
        nonlocal count
        count += 1
        return count

    return step


def guard(x, y):
    global a, b, c
    assert x
    assert x > 0, "x must be positive"
    assert isinstance(y, (int, float)), f"bad type {type(y)}"
    pass
    del x
    del y, z
    del items[0], obj.attr
    del (a, b)
    del [c]
    if y:
        raise
    raise ValueError("bad value")
    raise RuntimeError("wrapped") from err
    return


def returns():
    return 1, 2
    return (1, 2)
    return *xs, last
    return x if x else None
