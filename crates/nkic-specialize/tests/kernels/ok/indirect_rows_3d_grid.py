import nki
import nki.language as nl
import nki.isa as nisa


# Run-time row indices combined with 3-D grids on the other dims: the
# rows vary along the grid's partition axis.
# nkic: args table=float32[64,4,32] rows=int32[16,1]
@nki.jit
def gather_blocks(table, rows):
    out = nl.ndarray((16, 4, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(16)[:, None]
    idx = nl.load(rows)
    j = nl.arange(4)[None, :, None]
    k = nl.arange(32)[None, None, :]
    t = nl.load(table[idx[i_p, 0], j, k])
    print(t.shape)
    nl.store(out, value=t)
    return out
