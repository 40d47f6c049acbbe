def mode(n):
    if n == 0:
        m = "a"
    else:
        m = "b"
    elif n == 1:
        m = "c"
    return m
