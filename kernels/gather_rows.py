"""An embedding lookup: row `ids[i]` of `table` for every `i`, over
128-row tiles of `ids` (int32 [N, 1], N a multiple of 128).

Each tile of indices is loaded into SBUF and one indirect `dma_copy`
gathers the 128 rows it names (`vector_offset`): the rows are picked when
the kernel runs, so the table may have fewer rows than a tile has
partitions. An index outside the table gives a row of zeros (the gather
skips it, `oob_mode=skip`, and the tile was zeroed first), so the
kernel's random inputs run too.
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
        idx = nl.ndarray((128, 1), nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=ids[nl.ds(t * 128, 128), :])
        rows = nl.ndarray((128, d), table.dtype, buffer=nl.sbuf)
        nisa.memset(dst=rows, value=0.0)
        nisa.dma_copy(
            dst=rows,
            src=table.ap([[d, 128], [1, d]], vector_offset=idx, indirect_dim=0),
            oob_mode=nisa.oob_mode.skip,
        )
        nisa.dma_copy(dst=out[nl.ds(t * 128, 128), :], src=rows)
    return out
