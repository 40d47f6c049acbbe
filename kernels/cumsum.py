"""Cumulative sum along each row: out[i, j] = x[i, 0] + ... + x[i, j].

x is [R, C]; rows go on the partitions, up to 128 at a time, and each row
tile is scanned in chunks of up to 2048 columns with
nisa.tensor_scalar_cumulative (op0 = add 0.0 leaves the inputs unchanged,
op1 = add is the running sum). The first chunk starts from zero
(reduce_cmd=reset_reduce); every later chunk starts from the last running
sum of the chunk before it (reduce_cmd=load_reduce with that (P, 1)
column as imm1), so the chunks chain exactly and the result equals a
left-to-right float32 sum. The scan runs in float32; for other input
dtypes the sums are rounded to x's dtype on the way out.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[32,4096]
@nki.jit
def cumsum(x):
    R, C = x.shape
    P = nl.tile_size.pmax
    CB = 2048
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for r in range((R + P - 1) // P):
        n = min(P, R - r * P)
        rs = nl.ds(r * P, n)
        prev = None
        for c in range((C + CB - 1) // CB):
            w = min(CB, C - c * CB)
            cs = nl.ds(c * CB, w)
            t = nl.ndarray((n, w), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[rs, cs])
            sums = nl.ndarray((n, w), dtype=nl.float32, buffer=nl.sbuf)
            if prev is None:
                nisa.tensor_scalar_cumulative(dst=sums, src=t, op0=nl.add, imm0=0.0, op1=nl.add,
                                              reduce_cmd=nisa.reduce_cmd.reset_reduce)
            else:
                nisa.tensor_scalar_cumulative(dst=sums, src=t, op0=nl.add, imm0=0.0, op1=nl.add,
                                              imm1=prev, reduce_cmd=nisa.reduce_cmd.load_reduce)
            prev = sums[:, w - 1:w]
            if x.dtype == nl.float32:
                nisa.dma_copy(dst=out[rs, cs], src=sums)
            else:
                o = nl.ndarray((n, w), dtype=x.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=o, src=sums)
                nisa.dma_copy(dst=out[rs, cs], src=o)
    return out
