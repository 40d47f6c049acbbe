import nki
import nki.isa as nisa
import nki.language as nl

BN_FMAX = 512


def mean_and_var(stats_dst, data, n_cols, *, chunk=BN_FMAX):
    """Fills stats_dst[:, 0] with the mean and stats_dst[:, 1] with the variance."""
    n_chunks = (n_cols + chunk - 1) // chunk
    partial = nl.ndarray((data.shape[0], 6 * n_chunks), nl.float32, buffer=nl.sbuf)
    for c in range(n_chunks):
        width = min(chunk, n_cols - c * chunk)
        nisa.bn_stats(
            dst=partial[:, 6 * c:6 * (c + 1)],
            data=data[:, c * chunk:c * chunk + width],
        )
    nisa.bn_aggr(dst=stats_dst, data=partial)


def normalize(dst, data, stats, eps=1e-5, gamma=None, beta=None):
    rstd = nl.ndarray((data.shape[0], 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=rstd, data=stats[:, 1:2], op0=nl.add, operand0=eps)
    nisa.activation(dst=rstd, op=nl.rsqrt, data=rstd)
    nisa.tensor_scalar(
        dst=dst,
        data=data,
        op0=nl.subtract,
        operand0=stats[:, 0:1],
        op1=nl.multiply,
        operand1=rstd,
    )
    if gamma is not None:
        nisa.tensor_tensor(dst=dst, data1=dst, data2=gamma, op=nl.multiply)
    if beta is not None:
        nisa.tensor_tensor(dst=dst, data1=dst, data2=beta, op=nl.add)


@nki.jit
def layernorm(x, gamma, beta, eps=1e-5):
    n_rows, n_cols = x.shape
    P = nl.tile_size.pmax
    y = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    g_tile = nl.ndarray((P, n_cols), gamma.dtype, buffer=nl.sbuf)
    b_tile = nl.ndarray((P, n_cols), beta.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_tile, src=gamma.broadcast(0, P))
    nisa.dma_copy(dst=b_tile, src=beta.broadcast(0, P))
    for r in range(n_rows // P):
        rows = nl.ds(r * P, P)
        data = nl.ndarray((P, n_cols), nl.float32, buffer=nl.sbuf)
        stats = nl.ndarray((P, 2), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=data, src=x[rows, :])
        mean_and_var(stats, data, n_cols)
        normalize(data, data, stats, eps=eps, gamma=g_tile, beta=b_tile)
        nisa.dma_copy(dst=y[rows, :], src=data)
    return y
