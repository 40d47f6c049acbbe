def every_other(t):
    return t[0:128:2:1]
