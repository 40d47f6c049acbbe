"""`x + 1 + 1 + … + 1` (`STEPS` additions, each rounded to float32) over
row tiles of a float32 [R, C], R a multiple of 128, in a loop that runs
on the device (`nl.dynamic_range`).

The loop body is specialized once and runs R / 128 times. Each iteration
makes its `STEPS + 1` tiles anew: a load, then a chain of additions, each
into a new tile. The tiles of one iteration do not fit SBUF side by side
at the bundled shape (129 tiles of 2 KiB per partition against 240 KiB),
so a tile takes the bytes of one that is dead, as in an unrolled loop,
and the next iteration's first writes to those bytes wait for this
iteration's last reads of them (docs/language.md, dynamic loops).
"""
import nki
import nki.isa as nisa
import nki.language as nl

STEPS = 128


# nkic: args x=float32[256,512]
@nki.jit
def dynamic_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0, "rows must be a multiple of 128"
    for i in nl.dynamic_range(rows // P):
        acc = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=acc, src=x[nl.ds(i * P, P), :])
        for _ in range(STEPS):
            nxt = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=nxt, data=acc, op0=nl.add, operand0=1.0)
            acc = nxt
        nisa.dma_copy(dst=out[nl.ds(i * P, P), :], src=acc)
    return out
