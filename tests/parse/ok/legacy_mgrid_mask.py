import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def masked_exp(in_tensor, n_rows, n_cols):
    """Processes a ragged region using compile-time masks on affine index expressions."""
    out_tensor = nl.ndarray(in_tensor.shape, in_tensor.dtype, buffer=nl.shared_hbm)
    grid = nl.mgrid[0:128, 0:512]
    i_p, i_f = nl.mgrid[0:128, 0:512]
    for r in nl.affine_range((n_rows + 127) // 128):
        for c in nl.affine_range((n_cols + 511) // 512):
            in_bounds = (r * 128 + i_p < n_rows) & (c * 512 + i_f < n_cols)
            tile = nl.load(in_tensor[r * 128 + grid.p, c * 512 + grid.x], mask=in_bounds)
            tile = nl.exp(tile, mask=in_bounds)
            nl.store(out_tensor[r * 128 + i_p, c * 512 + i_f], value=tile, mask=in_bounds)
    even = nl.arange(256)[None, :] * 2 + 1
    flag = ~(i_p >= 64) | (i_f < 10) ^ (i_f > 500)
    return out_tensor
