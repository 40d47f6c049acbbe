# kernel: for_trn3
import nki
import nki.language as nl
import nki.isa as nisa


# A second kernel of the file, for another target: not compiled by this
# run, so its `platform_target` gets no warning.
@nki.jit(platform_target="trn2")
def for_trn2(x):
    return x


# nkic: args x=float32[128,64]
@nki.jit(platform_target="trn3")
def for_trn3(x):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
