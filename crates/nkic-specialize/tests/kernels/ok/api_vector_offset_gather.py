import nki
import nki.language as nl
import nki.isa as nisa


# A `vector_offset` index counts rows of the tensor `.ap` is called on:
# `wide`'s rows are 66 elements whatever the pattern's first step (64), as
# NKI's access-pattern guide and nki-library's topk_reduce have it.
# nkic: args table=float32[1024,64] ids=int32[128,1] wide=float32[1024,66]
@nki.jit
def gather_rows(table, ids, wide):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    idx = nl.ndarray((128, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids)
    rows = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=table.ap([[64, 128], [1, 64]], vector_offset=idx, indirect_dim=0), oob_mode=nisa.oob_mode.skip)
    nisa.dma_copy(dst=out, src=rows)
    scattered = nl.ndarray((1024, 64), nl.float32, buffer=nl.shared_hbm)
    nl.store(scattered[idx, nl.arange(64)[None, :]], value=rows)
    narrow = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=narrow, src=wide.ap([[64, 128], [1, 64]], vector_offset=idx, indirect_dim=0), oob_mode=nisa.oob_mode.skip)
    out2 = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out2, src=narrow)
    return out, out2
