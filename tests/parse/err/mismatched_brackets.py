def view(t):
    return t[0:128, (1, 2]]
