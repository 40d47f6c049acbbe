def kernel(x):
    for i in range(4):
        # Load and scale the tile here.
    return x
