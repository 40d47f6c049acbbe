import nki
import nki.language as nl
import nki.isa as nisa

# A warning raised in every iteration of an unrolled loop is shown once,
# with the loop note of its first iteration and a count of the repeats;
# a warning at another place is its own.


# nkic: args x=float32[384,64]
@nki.jit
def copy_rows(x):
    out = nl.ndarray((384, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in range(3):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128, :], dge_mode=3)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=t, dge_mode=0)
    return out
