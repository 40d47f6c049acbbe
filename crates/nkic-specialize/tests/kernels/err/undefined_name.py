# expect: E0200
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    tile_size = 128
    return x[0:tile_sise]
