import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args table=float32[1024,64] ids=int32[128,1]
@nki.jit
def gather_rows(table, ids):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    idx = nl.ndarray((128, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids)
    rows = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=table.ap([[64, 128], [1, 64]], vector_offset=idx, indirect_dim=0), oob_mode=nisa.oob_mode.skip)
    nisa.dma_copy(dst=out, src=rows)
    scattered = nl.ndarray((1024, 64), nl.float32, buffer=nl.shared_hbm)
    nl.store(scattered[idx, nl.arange(64)[None, :]], value=rows)
    return out
