def kernel(x):
    name = "tile_load
    return name
