# expect: E0500
import nki
import nki.language as nl
import nki.isa as nisa


# An on-chip access pattern stays within each partition's row: 128
# elements from the start of 64-element rows run into the next partition,
# though they stay inside the tile's bytes.
# nkic: args x=float32[64,128]
@nki.jit
def ap_partition_row_overrun(x):
    out = nl.ndarray((64, 128), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
    u = nl.ndarray((64, 128), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t.ap([[64, 64], [1, 128]]))
    nisa.dma_copy(dst=out, src=u)
    return out
