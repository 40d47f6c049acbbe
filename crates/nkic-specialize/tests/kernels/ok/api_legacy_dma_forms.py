import nki
import nki.language as nl
import nki.isa as nisa


# Legacy DMA accumulation (`dst_rmw_op`), a legacy string matmul mode and
# an `nl.hbm` output (a warning without a grid).
# nkic: target trn2
# nkic: args a=float32[128,64] b=float8_e5m2[128,2,64] c=float8_e5m2[128,2,512]
@nki.jit
def legacy_forms(a, b, c):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.hbm)
    t = nl.load(a)
    nl.store(out, t)
    nisa.dma_copy(dst=out, src=t, dst_rmw_op=nl.add)
    bs = nl.load(b)
    cs = nl.load(c)
    p = nisa.nc_matmul(bs, cs, perf_mode="double_row_gen3")
    print(p.shape)
    return out
