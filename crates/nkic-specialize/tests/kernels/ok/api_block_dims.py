import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[4,128,512]
@nki.jit
def block_dims(a):
    out = nl.ndarray((4, 128, 512), nl.float32, buffer=nl.shared_hbm)
    tiles = nl.ndarray((4, nl.par_dim(128), 512), nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((4, nl.par_dim(128), 512), nl.float32, buffer=nl.sbuf)
    for b in nl.affine_range(4):
        tiles[b] = nl.load(a[b])
        res[b] = nisa.activation(op=nl.exp, data=tiles[b])
        nl.store(out[b], value=res[b])
    print(tiles.shape, tiles[1].shape, tiles[2, 0:64, :].shape)
    return out
