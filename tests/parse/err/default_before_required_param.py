def tile_kernel(x, tile_rows=128, out):
    return out
