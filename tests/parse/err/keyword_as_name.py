def make(shape, lambda=1.0):
    return shape
