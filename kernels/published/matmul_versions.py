"""Four versions of one large matrix multiply, c = a_t.T @ b, written after
the versions whose hardware profiles AWS published (the kernel-optimization
guide on trn2 with float32 inputs, and the older matrix-multiplication
tutorial on trn1 with bfloat16 inputs; see docs/cycle-model.md, "Published
measurements"). The code is nkic's own; only the loop structure follows
the published descriptions.

a_t is [K, M] (A transposed), b is [K, N]; M, K multiples of 128, N of 512.

* `mm_tiled`: every output tile loads its two input tiles again for each
  K-tile (no reuse), accumulating in PSUM.
* `mm_hoisted`: the a_t column slab of an output row is loaded once per
  row, the b slab once per output tile.
* `mm_block_free`: output blocks of `BM` × `BN` tiles share their loads;
  every loaded tile is its own SBUF tensor, as in the published version.
* `mm_block_all`: K is blocked too; partial sums of each K block are added
  into SBUF accumulators (VectorE), which are stored when K is done.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a_t=float32[256,256] b=float32[256,1024]
# nkic: target trn2
@nki.jit
def mm_tiled(a_t, b):
    K, M = a_t.shape
    _, N = b.shape
    P = nl.tile_size.pmax
    TN = nl.tile_size.gemm_moving_fmax
    c = nl.ndarray((M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for mi in nl.affine_range(M // P):
        for ni in nl.affine_range(N // TN):
            acc = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(K // P):
                lt = nl.ndarray((P, P), dtype=a_t.dtype, buffer=nl.sbuf)
                rt = nl.ndarray((P, TN), dtype=b.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lt, src=a_t[ki * P:(ki + 1) * P, mi * P:(mi + 1) * P])
                nisa.dma_copy(dst=rt, src=b[ki * P:(ki + 1) * P, ni * TN:(ni + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=lt, moving=rt)
            out = nl.ndarray((P, TN), dtype=c.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(dst=c[mi * P:(mi + 1) * P, ni * TN:(ni + 1) * TN], src=out)
    return c


# nkic: args a_t=float32[256,256] b=float32[256,1024]
# nkic: target trn2
@nki.jit
def mm_hoisted(a_t, b):
    K, M = a_t.shape
    _, N = b.shape
    P = nl.tile_size.pmax
    TN = nl.tile_size.gemm_moving_fmax
    KT = K // P
    c = nl.ndarray((M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for mi in nl.affine_range(M // P):
        lts = nl.ndarray((P, KT, P), dtype=a_t.dtype, buffer=nl.sbuf)
        for ki in nl.affine_range(KT):
            nisa.dma_copy(dst=lts[:, ki, :], src=a_t[ki * P:(ki + 1) * P, mi * P:(mi + 1) * P])
        for ni in nl.affine_range(N // TN):
            rts = nl.ndarray((P, KT, TN), dtype=b.dtype, buffer=nl.sbuf)
            for ki in nl.affine_range(KT):
                nisa.dma_copy(dst=rts[:, ki, :], src=b[ki * P:(ki + 1) * P, ni * TN:(ni + 1) * TN])
            acc = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(KT):
                nisa.nc_matmul(dst=acc, stationary=lts[:, ki, :], moving=rts[:, ki, :])
            out = nl.ndarray((P, TN), dtype=c.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(dst=c[mi * P:(mi + 1) * P, ni * TN:(ni + 1) * TN], src=out)
    return c


# nkic: args a_t=float32[256,256] b=float32[256,1024]
# nkic: target trn2
@nki.jit
def mm_block_free(a_t, b, BM=2, BN=2):
    K, M = a_t.shape
    _, N = b.shape
    P = nl.tile_size.pmax
    TN = nl.tile_size.gemm_moving_fmax
    KT = K // P
    c = nl.ndarray((M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // (BM * P)):
        # One SBUF tile per (row tile, K-tile), as the published version
        # allocates them: separate tiles, not one block tensor.
        lts = []
        for i in nl.affine_range(BM):
            col = (mb * BM + i) * P
            row_tiles = []
            for ki in nl.affine_range(KT):
                lt = nl.ndarray((P, P), dtype=a_t.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lt, src=a_t[ki * P:(ki + 1) * P, col:col + P])
                row_tiles.append(lt)
            lts.append(row_tiles)
        for nb in nl.affine_range(N // (BN * TN)):
            rts = []
            for j in nl.affine_range(BN):
                col = (nb * BN + j) * TN
                col_tiles = []
                for ki in nl.affine_range(KT):
                    rt = nl.ndarray((P, TN), dtype=b.dtype, buffer=nl.sbuf)
                    nisa.dma_copy(dst=rt, src=b[ki * P:(ki + 1) * P, col:col + TN])
                    col_tiles.append(rt)
                rts.append(col_tiles)
            for i in nl.affine_range(BM):
                for j in nl.affine_range(BN):
                    acc = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)
                    for ki in nl.affine_range(KT):
                        nisa.nc_matmul(dst=acc, stationary=lts[i][ki], moving=rts[j][ki])
                    out = nl.ndarray((P, TN), dtype=c.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=out, src=acc)
                    row = (mb * BM + i) * P
                    col = (nb * BN + j) * TN
                    nisa.dma_copy(dst=c[row:row + P, col:col + TN], src=out)
    return c


# nkic: args a_t=float32[256,512] b=float32[256,1024]
# nkic: target trn2
# nkic: consts BM=2 BN=2 BK=2
@nki.jit
def mm_block_all(a_t, b, BM=16, BN=2, BK=8):
    K, M = a_t.shape
    _, N = b.shape
    P = nl.tile_size.pmax
    TN = nl.tile_size.gemm_moving_fmax
    WM = BM * P
    WN = BN * TN
    WK = BK * P
    c = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for nb in nl.affine_range(N // WN):
        # One SBUF accumulator per output tile of this column block.
        sums = []
        for mb in range(M // WM):
            row = []
            for i in range(BM):
                cols = []
                for j in range(BN):
                    s = nl.ndarray((P, TN), dtype=a_t.dtype, buffer=nl.sbuf)
                    nisa.memset(dst=s, value=0.0)
                    cols.append(s)
                row.append(cols)
            sums.append(row)
        for kb in nl.sequential_range(K // WK):
            rts = []
            for t in range(BK):
                r = nl.ndarray((P, WN), dtype=b.dtype, buffer=nl.sbuf)
                k0 = (kb * BK + t) * P
                nisa.dma_copy(dst=r, src=b[k0:k0 + P, nb * WN:(nb + 1) * WN])
                rts.append(r)
            for mb in nl.affine_range(M // WM):
                lts = []
                for t in nl.affine_range(BK):
                    l = nl.ndarray((P, WM), dtype=a_t.dtype, buffer=nl.sbuf)
                    k0 = (kb * BK + t) * P
                    nisa.dma_copy(dst=l, src=a_t[k0:k0 + P, mb * WM:(mb + 1) * WM])
                    lts.append(l)
                for j in nl.affine_range(BN):
                    for i in nl.affine_range(BM):
                        acc = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)
                        for t in nl.affine_range(BK):
                            nisa.nc_matmul(
                                dst=acc,
                                stationary=lts[t][:, i * P:(i + 1) * P],
                                moving=rts[t][:, j * TN:(j + 1) * TN],
                            )
                        nisa.tensor_tensor(dst=sums[mb][i][j], data1=sums[mb][i][j], data2=acc, op=nl.add)
        for mb in nl.affine_range(M // WM):
            for i in nl.affine_range(BM):
                packed = nl.ndarray((P, WN), dtype=nl.float32, buffer=nl.sbuf)
                for j in nl.affine_range(BN):
                    nisa.tensor_copy(dst=packed[:, j * TN:(j + 1) * TN], src=sums[mb][i][j])
                row = (mb * BM + i) * P
                nisa.dma_copy(dst=c[row:row + P, nb * WN:(nb + 1) * WN], src=packed)
    return c
