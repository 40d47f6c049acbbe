import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def block_copy(src):
    n_tiles = src.shape[0] // 128
    dst = nl.ndarray(src.shape, src.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((n_tiles, nl.par_dim(128), 512), dtype=src.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n_tiles):
        buf[i, :, :] = nl.load(src[i * 128:(i + 1) * 128, :])
    for i in nl.affine_range(n_tiles):
        nl.store(dst[i * 128:(i + 1) * 128, :], value=buf[i])
    return dst
