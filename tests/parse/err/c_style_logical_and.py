def in_bounds(i, n):
    if i >= 0 && i < n:
        return True
    return False
