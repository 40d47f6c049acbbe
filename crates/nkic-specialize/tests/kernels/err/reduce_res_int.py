# expect: E0505
import nki
import nki.language as nl
import nki.isa as nisa


# Every reduction result is a float tensor (isa.md), here caught before
# the backend sees the op.
# nkic: args x=float32[128,256]
@nki.jit
def k(x):
    t = nl.load(x)
    e = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    sums = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        nisa.activation_reduce(dst=e, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=sums)
