def check(x):
    if x.shape[0] = 128:
        return True
    return False
