"""A kernel in the legacy dialect (`neuronxcc.nki`, nl.load/nl.store, index grids)."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def legacy_exp(a_tensor):
    out = nl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(a_tensor.shape[1])[None, :]
    a = nl.load(a_tensor[i_p, i_f])
    nl.store(out[i_p, i_f], value=nl.exp(a))
    return out
