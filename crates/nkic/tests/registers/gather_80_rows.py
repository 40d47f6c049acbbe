"""Gathers 80 rows of `table` by indices the kernel computes at run time.

Row `i` of the result is row `(7 * i) % 128` of `table`. Each gather reads
its index from a 1x1 SBUF tile into a register (`scalar_offset`), so the
unrolled loop makes 80 registers, more than the 64 a queue has: the
backend must give registers whose live ranges do not overlap the same
physical register.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args table=float32[128,64]
@nki.jit
def gather_80_rows(table):
    out = nl.ndarray((80, 64), dtype=table.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((1, 80), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(idx, [[7, 80]])
    for i in nl.static_range(80):
        # (7 * i) % 128 as an int32 tile: 7 * i - 128 * ((7 * i) // 128).
        one = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.tensor_scalar(one, idx[0:1, i:i + 1], nl.subtract, 128 * ((7 * i) // 128))
        row = nl.ndarray((1, 64), dtype=table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=row, src=table.ap([[64, 1], [1, 64]], offset=0, scalar_offset=one))
        nisa.dma_copy(dst=out[i:i + 1, 0:64], src=row)
    return out
