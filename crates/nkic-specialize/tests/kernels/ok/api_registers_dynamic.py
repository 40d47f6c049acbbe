import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=bfloat16[512,256] n=int32[1,1]
@nki.jit
def dynamic_rows(a, n):
    out = nl.ndarray((512, 256), nl.bfloat16, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    count = nisa.register_alloc()
    nisa.register_load(count, n_sb)
    row = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=row, value=0)
    step = nisa.register_alloc(128)
    for i in nl.dynamic_range(0, count, 1):
        t = nl.ndarray((128, 256), nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap([[256, 128], [1, 256]], offset=0, scalar_offset=row, indirect_dim=0))
        nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=t)
    last = nisa.register_alloc()
    nisa.register_move(last, step)
    nisa.register_store(row, last)
    return out
