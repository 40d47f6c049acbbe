import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def running_sum(x, n_valid):
    """Sums the first n_valid column blocks with a hardware loop (never unrolled)."""
    P, F = 128, 512
    n_blocks = x.shape[1] // F
    out = nl.ndarray((P, F), nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((P, F), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)

    count = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=count, src=n_valid)
    limit = nisa.register_alloc()
    nisa.register_load(limit, count)

    for b in nl.dynamic_range(0, limit, 1):
        block = nl.ndarray((P, F), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=block, src=x.ap([[x.shape[1], P], [1, F]], scalar_offset=b, indirect_dim=1))
        nisa.tensor_tensor(dst=acc, data1=acc, data2=block, op=nl.add)

    remaining = nisa.register_alloc(n_blocks)
    flag = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    while remaining:
        nisa.tensor_scalar(dst=flag, data=flag, op0=nl.subtract, operand0=1)
        nisa.register_load(remaining, flag)

    nisa.dma_copy(dst=out, src=acc)
    return out
