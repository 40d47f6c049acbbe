def debug(x):
    print "shape:", x.shape
    return x
