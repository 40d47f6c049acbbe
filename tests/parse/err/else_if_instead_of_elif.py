def mode(n):
    if n == 0:
        m = "zero"
    else if n == 1:
        m = "one"
    return m
