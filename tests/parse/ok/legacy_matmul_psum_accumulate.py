import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_legacy(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    i_k = nl.arange(128)[:, None]
    i_m = nl.arange(128)[None, :]
    i_n = nl.arange(512)[None, :]
    i_out_p = nl.arange(128)[:, None]

    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                lhs_tile = nl.load(lhsT[k * 128 + i_k, m * 128 + i_m])
                rhs_tile = nl.load(rhs[k * 128 + i_k, n * 512 + i_n])
                res_psum[...] += nisa.nc_matmul(lhs_tile, rhs_tile)
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * 128 + i_out_p, n * 512 + i_n], value=res_sb)
    return result
