import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def enums(x):
    print(nisa.engine.vector, nisa.engine.vector.value, nisa.reduce_cmd.reset_reduce.name)
    print(nisa.dge_mode.hwdge == nisa.dge_mode.hwdge, nisa.oob_mode.skip, nisa.matmul_perf_mode.double_row)
    print(nisa.vector_engine == nisa.engine.vector, nisa.get_nc_version(), nisa.nc_version.gen4)
    print(nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax)
    print(nl.tile_size.psum_num_banks, nl.tile_size.sbuf_fmax_bytes, nl.tile_size.bn_stats_fmax)
    print(nl.float8_e4m3fn, nl.bfloat16.itemsize, nl.sbuf, nl.hbm, nl.shared_hbm)
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out
