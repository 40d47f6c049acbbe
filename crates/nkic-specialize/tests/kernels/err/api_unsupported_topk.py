# expect: E0524
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=bfloat16[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    v = nl.ndarray((128, 8), nl.bfloat16, buffer=nl.sbuf)
    i = nl.ndarray((128, 8), nl.uint32, buffer=nl.sbuf)
    nisa.topk(val_dst=v, idx_dst=i, src=t, n=1024)
