import nki
import nki.language as nl
import nki.isa as nisa


# A `vector_offset` gather picks its rows at run time: 128 partitions may
# gather from a table of four rows (the simulator checks each index), so
# only one row of the pattern has to lie inside the table when the
# kernel is compiled.
# nkic: args table=float32[4,64] ids=int32[128,1]
@nki.jit
def gather_few_rows(table, ids):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    idx = nl.ndarray((128, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids)
    rows = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=table.ap([[64, 128], [1, 64]], vector_offset=idx, indirect_dim=0))
    nisa.dma_copy(dst=out, src=rows)
    return out
