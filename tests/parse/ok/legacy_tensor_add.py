import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tensor_add(a_input, b_input):
    """Legacy style: load/store with index grids built from nl.arange."""
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    for t in nl.affine_range(a_input.shape[0] // 128):
        a_tile = nl.load(a_input[t * 128 + i_p, i_f])
        b_tile = nl.load(b_input[t * 128 + i_p, i_f])
        c_tile = a_tile + b_tile
        nl.store(c_output[t * 128 + i_p, i_f], value=c_tile)
    return c_output
