def pick(n):
    m = 0
    elif n > 1:
        m = 1
    return m
