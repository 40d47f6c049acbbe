import nki
import nki.language as nl
import nki.isa as nisa


# `nisa.memset` of an integer tile takes an integral float (`value=0.0`),
# as NKI does; a fractional one is E0515 (err/api_memset_float_int.py).
# nkic: args x=uint8[128,64]
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), nl.uint8, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), nl.uint8, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
    nisa.memset(dst=t[0:64, :], value=3.0)
    nisa.dma_copy(dst=out, src=t)
    return out
