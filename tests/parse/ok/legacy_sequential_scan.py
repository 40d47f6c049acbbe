import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def prefix_sum_blocks(x):
    """A loop-carried running sum needs sequential_range in the legacy language."""
    n_blocks = x.shape[1] // 512
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    carry = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    for blk in nl.sequential_range(n_blocks):
        tile = nl.load(x[:, blk * 512:(blk + 1) * 512])
        scanned = nisa.tensor_tensor_scan(
            tile, tile, initial=carry, op0=nl.multiply, op1=nl.add
        )
        carry = scanned[:, 511:512]
        nl.store(out[:, blk * 512:(blk + 1) * 512], value=scanned)
    for unrolled in nl.static_range(2):
        nl.device_print("carry", carry)
    return out
