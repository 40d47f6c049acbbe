import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def transpose_2d(src):
    """Transposes a (R, C) HBM matrix through TensorE, one 128 x 128 block at a time."""
    R, C = src.shape
    B = 128
    dst = nl.ndarray((C, R), src.dtype, buffer=nl.shared_hbm)
    identity = nl.shared_identity_matrix(B, dtype=src.dtype)
    blocks = [(i, j) for i in range(R // B) for j in range(C // B)]
    for i, j in blocks:
        tile = nl.ndarray((B, B), src.dtype, buffer=nl.sbuf)
        flipped = nl.ndarray((B, B), nl.float32, buffer=nl.psum)
        back = nl.ndarray((B, B), src.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=src[i * B:(i + 1) * B, j * B:(j + 1) * B])
        nisa.nc_transpose(dst=flipped, data=tile)
        nisa.tensor_copy(dst=back, src=flipped)
        nisa.dma_copy(dst=dst[j * B:(j + 1) * B, i * B:(i + 1) * B], src=back)
    del identity
    return dst
