def choose(x):
    y = x
    else:
        y = 0
    return y
