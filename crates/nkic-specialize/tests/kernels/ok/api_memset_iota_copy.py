import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def memset_iota_copy(x):
    out = nl.ndarray((128, 64), nl.int32, buffer=nl.shared_hbm)
    ids = nl.ndarray((128, 64), nl.int32, buffer=nl.sbuf)
    i1 = nisa.iota(ids, [[1, 64]], offset=0, channel_multiplier=64)
    z = nl.ndarray((128, 64), nl.float32, buffer=nl.psum)
    i2 = nisa.memset(dst=z, value=0.0, engine=nisa.engine.vector)
    m = nisa.memset(shape=(128, 64), value=3, dtype=nl.int32)
    g = nisa.iota(nl.arange(64)[None, :] + 64 * nl.arange(128)[:, None], dtype=nl.int32)
    c = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    i3 = nisa.tensor_copy(dst=c, src=z, engine=nisa.engine.scalar, name="evict")
    i3.depends_on(i1, i2)
    c2 = nisa.tensor_copy(c, dtype=nl.bfloat16)
    print(m.shape, m.dtype, g.shape, c2.dtype)
    nisa.dma_copy(dst=out, src=ids)
    return out
