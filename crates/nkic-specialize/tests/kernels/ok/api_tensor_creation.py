import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,512]
@nki.jit
def creation(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm, name="out")
    a = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf, name="a")
    z = nl.zeros((128, 64), nl.bfloat16)
    o = nl.ones((64, 32), nl.int32, buffer=nl.sbuf)
    f = nl.full((32, 16), 2.5, nl.float32)
    zl = nl.zeros_like(a)
    el = nl.empty_like(a, dtype=nl.bfloat16)
    placed = nl.ndarray((128, 512), nl.float32, buffer=nl.psum, address=(0, 4096))
    print(a.shape, a.dtype, a.buffer, a.ndim, a.size, a.name, a.strides, a.offset)
    print(el.dtype, zl.buffer, placed.buffer, nl.tile_size.pmax, nl.tile_size.psum_bank_fmax)
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=out, src=a)
    return out
