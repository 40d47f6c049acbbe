"""Keeps more SBUF tiles alive than SBUF holds, so the backend spills.

x is [128, C] float32. Tile k (k = 0 .. N-1) is x * (k + 1); all N tiles
are computed first and summed afterwards from the last to the first, so the
first tiles wait longest. N = 128 tiles of C = 512 float32 are 256 KiB per
partition, more than SBUF's usable bytes per partition (245,752 on trn3,
229,376 on trn2): the compiler spills the tiles that wait longest to HBM
(warning E0906) and the result is the same as with enough SBUF.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[128,512]
@nki.jit
def spill(x):
    P, C = x.shape
    N = 128
    out = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.shared_hbm)
    xt = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    tiles = []
    for k in range(N):
        t = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=t, data=xt, op0=nl.multiply, operand0=float(k + 1))
        tiles.append(t)
    acc = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=acc, src=tiles[N - 1])
    for k in range(N - 2, -1, -1):
        nisa.tensor_tensor(dst=acc, data1=acc, data2=tiles[k], op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
