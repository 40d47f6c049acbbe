def first(t):
    return t[]
