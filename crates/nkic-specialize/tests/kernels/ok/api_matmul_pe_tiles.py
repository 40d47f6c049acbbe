import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args g=bfloat16[4,64,64] h=bfloat16[4,64,512]
@nki.jit
def pe_tiles(g, h):
    out = nl.ndarray((4, 64, 512), nl.float32, buffer=nl.shared_hbm)
    for i in range(2):
        for j in range(2):
            k = i * 2 + j
            tg = nl.load(g[k])
            th = nl.load(h[k])
            p = nl.ndarray((64, 512), nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=p, stationary=tg, moving=th, tile_position=(i * 64, j * 64), tile_size=(64, 64))
            nl.store(out[k], nl.copy(p))
    return out
