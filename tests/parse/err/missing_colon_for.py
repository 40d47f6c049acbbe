import nki.language as nl


def tile_loop(x):
    for i in nl.affine_range(x.shape[0] // 128)
        tile = nl.load(x[i * 128:(i + 1) * 128])
    return tile
