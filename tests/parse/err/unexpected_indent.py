def scale(x):
    y = x * 2
        z = y + 1
    return z
