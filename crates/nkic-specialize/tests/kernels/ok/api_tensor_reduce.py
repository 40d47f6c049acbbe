import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,4,64] i=int32[128,64]
@nki.jit
def reduce(a, i):
    out = nl.ndarray((128, 4), nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    r = nl.ndarray((128, 4), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=r, op=nl.add, data=x, axis=2)
    all_max = nisa.tensor_reduce(op=nl.maximum, data=x, axis=(1, 2))
    kept = nisa.tensor_reduce(nl.minimum, x, axis=(-1,), keepdims=True)
    ti = nl.load(i)
    bits = nisa.tensor_reduce(op=nl.bitwise_or, data=ti, axis=[1])
    print(all_max.shape, kept.shape, bits.dtype)
    nl.store(out, r)
    return out
