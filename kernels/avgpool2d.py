"""2-D average pooling with a square window and an equal stride.

x is [C, H, W] (channels, height, width), out is [C, H/k, W/k] with
out[c, i, j] = mean(x[c, k*i:k*i+k, k*j:k*j+k]) for the compile-time window
size k (`pool`). Channels go on the partitions, 128 at a time; each
channel tile is processed in bands of whole window rows (at most 4096
elements per partition), so loads, reductions and stores of successive
bands overlap. A band [128, hb, W] is viewed, without copying, as
[128, hb/k, W/k, k, k] (the window offsets moved to the two innermost free
dims), so one nisa.tensor_reduce sums every window, and nisa.tensor_scalar
multiplies the sums by 1/k^2. H and W must be multiples of k; C a multiple
of 128 or at most 128.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[256,16,32]
# nkic: consts pool=2
@nki.jit
def avgpool2d(x, pool):
    C, H, W = x.shape
    k = pool
    assert H % k == 0 and W % k == 0, "the window must tile the image"
    P = min(C, nl.tile_size.pmax)
    assert C % P == 0, "the channels must be a multiple of 128 (or at most 128)"
    # Rows per band: whole windows, at most 4096 elements (16 KiB of
    # float32) per partition. Smaller bands let the first reduction start
    # sooner and the last store leave sooner; much smaller ones make the
    # stores' rows so short that fixed DMA chunk costs dominate.
    hb = max(k, (4096 // W) // k * k)
    while H % hb != 0:
        hb -= k
    out = nl.ndarray((C, H // k, W // k), dtype=x.dtype, buffer=nl.shared_hbm)
    for c in range(C // P):
        cs = nl.ds(c * P, P)
        for band in range(H // hb):
            t = nl.ndarray((P, hb, W), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[cs, nl.ds(band * hb, hb), :])
            # windows[p, i, j, di, dj] = t[p, k*i + di, k*j + dj]
            windows = t.reshape((P, hb // k, k, W // k, k)).permute((0, 1, 3, 2, 4))
            sums = nl.ndarray((P, hb // k, W // k), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=sums, op=nl.add, data=windows, axis=(3, 4))
            means = nl.ndarray((P, hb // k, W // k), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=means, data=sums, op0=nl.multiply, operand0=1.0 / (k * k))
            nisa.dma_copy(dst=out[cs, nl.ds(band * hb // k, hb // k), :], src=means)
    return out
