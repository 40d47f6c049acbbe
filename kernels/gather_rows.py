"""An embedding lookup: row `ids[i]` of `table` for every `i`, over
128-row tiles of `ids` (int32 [N, 1], N a multiple of 128).

Each tile of indices is loaded into SBUF and one indirect `dma_copy`
gathers the 128 rows it names (`vector_offset`): the rows are picked when
the kernel runs, so the table may have fewer rows than a tile has
partitions. An index outside the table is clamped to its first or last
row first (NumPy's `take(..., mode="clip")`), so every gather reads
whole rows and the kernel's random inputs run too.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args table=float32[16,256] ids=int32[256,1]
@nki.jit
def gather_rows(table, ids):
    n = ids.shape[0]
    d = table.shape[1]
    out = nl.ndarray((n, d), table.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(n // 128):
        raw = nl.ndarray((128, 1), nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=raw, src=ids[nl.ds(t * 128, 128), :])
        idx = nl.ndarray((128, 1), nl.int32, buffer=nl.sbuf)
        nisa.tensor_scalar(
            dst=idx, data=raw, op0=nl.maximum, operand0=0, op1=nl.minimum, operand1=table.shape[0] - 1
        )
        rows = nl.ndarray((128, d), table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=table.ap([[d, 128], [1, d]], vector_offset=idx, indirect_dim=0))
        nisa.dma_copy(dst=out[nl.ds(t * 128, 128), :], src=rows)
    return out
