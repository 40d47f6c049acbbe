"""Static loop nests: IR loops appear only where ops are recorded."""
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[256,128]
@nki.jit
def nested(x):
    total = 0
    for i in range(4):              # no ops: leaves no IR loop
        total += i
    for r in nl.affine_range(2):
        for c in nl.sequential_range(2):
            if (r + c) % 2 == 1:
                continue           # iterations without ops still count
            t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[r * 128:(r + 1) * 128, c * 64:(c + 1) * 64])
    k = 0
    while k < 3:
        k += 1
        if k == 2:
            t = nl.ndarray((128, 128), x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[0:128, :])
    for v in [1, 2, 3]:
        if v == 2:
            break
        u = nl.ndarray((128, 128), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=u, src=x[128:256, :])
    print("total", total, "k", k)
