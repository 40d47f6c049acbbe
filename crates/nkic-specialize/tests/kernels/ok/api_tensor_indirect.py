import nki
import nki.language as nl
import nki.isa as nisa


# Tensor indirection (trn3): gather 32 columns of a tile at run-time
# positions into a dense tile.
# nkic: args x=bfloat16[128,512] cols=uint32[128,2]
@nki.jit
def gather_columns(x, cols):
    out = nl.ndarray((128, 32), nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.load(x)
    idx = nl.load(cols)
    picked = nl.ndarray((128, 32), nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=picked, src=t.indirect(idx, num_elem=32))
    print(t.indirect(idx).shape)
    nl.store(out, picked)
    return out
