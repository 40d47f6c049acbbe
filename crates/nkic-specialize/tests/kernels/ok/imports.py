import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from neuronxcc.nki import isa as nisa
from lib.tiles import row_tiles
from lib import consts
import lib.consts
import torch  # host-only: never used by the kernel

if __name__ == "__main__":
    a = torch.rand(256, 64)


# nkic: args a=bfloat16[256,64]
@nki.jit
def imports(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for r in row_tiles(a.shape[0]):
        t = nl.ndarray((consts.P, lib.consts.P // 2), a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[r, :])
        nisa.dma_copy(dst=out[r, 0:64], src=t)
    return out
