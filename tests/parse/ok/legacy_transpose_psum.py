import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def transpose_legacy(x):
    out = nl.ndarray((x.shape[1], x.shape[0]), x.dtype, buffer=nl.shared_hbm)
    ix, iy = nl.mgrid[0:128, 0:64]
    tile = nl.load(x[ix, iy])
    flipped_psum = nisa.nc_transpose(tile)
    flipped = nl.copy(flipped_psum, dtype=x.dtype)
    iy_t, ix_t = nl.mgrid[0:64, 0:128]
    nl.store(out[iy_t, ix_t], value=flipped)
    scaled = nisa.activation(op=nl.exp, data=tile, scale=-1.0, dtype=nl.float32)
    t2 = nl.transpose(tile, dtype=nl.bfloat16)
    return out
