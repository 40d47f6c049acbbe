import nki
import nki.language as nl
import nki.isa as nisa


# Random numbers and dropout in both call forms, seeded from a register
# value held in SBUF.
# nkic: args x=float32[128,256] seed=uint32[1,1]
@nki.jit
def noisy(x, seed):
    out = nl.ndarray((128, 256), nl.float32, buffer=nl.shared_hbm)
    s = nl.load(seed)
    nisa.set_rng_seed(src_seeds=s)
    nl.random_seed(s)
    t = nl.load(x)
    bits = nl.ndarray((128, 256), nl.uint16, buffer=nl.sbuf)
    nisa.rng(dst=bits)
    nisa.rng(dst=bits, engine=nisa.engine.gpsimd)
    u = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
    nisa.rand2(dst=u, min=-1.0, max=1.0)
    r = nl.rand((128, 256))
    keep = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=keep, value=0.25)
    d1 = nisa.dropout(t, prob=0.1)
    d2 = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
    nisa.dropout(dst=d2, data=t, prob=keep)
    d3 = nl.dropout(t, rate=0.5, dtype=nl.bfloat16)
    print(r.shape, r.dtype, d1.shape, d3.dtype)
    nl.store(out, d2)
    return out
