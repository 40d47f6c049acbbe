import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def attention_scores(q_t, k_t, v, causal=True):
    """softmax(q @ k.T / sqrt(d)) @ v for one head with d == 128 and seq <= 512."""
    d, seq_q = q_t.shape
    _, seq_k = k_t.shape
    assert d == 128 and seq_q <= 128 and seq_k <= 512
    scale = 1.0 / math.sqrt(d)
    out = nl.ndarray((seq_q, d), v.dtype, buffer=nl.shared_hbm)

    q_s = nl.ndarray((d, seq_q), q_t.dtype, buffer=nl.sbuf)
    k_s = nl.ndarray((d, seq_k), k_t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=q_s, src=q_t)
    nisa.dma_copy(dst=k_s, src=k_t)

    scores_p = nl.ndarray((seq_q, seq_k), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=scores_p, stationary=q_s, moving=k_s)

    scores = nl.ndarray((seq_q, seq_k), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=scores, op=nl.copy, data=scores_p, scale=scale)
    if causal:
        nisa.affine_select(
            dst=scores,
            pattern=[[-1, seq_k]],
            offset=0,
            channel_multiplier=1,
            on_true_tile=scores,
            on_false_value=-9984.0,
            cmp_op=nl.greater_equal,
        )

    row_max = nl.ndarray((seq_q, 1), nl.float32, buffer=nl.sbuf)
    row_sum = nl.ndarray((seq_q, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=scores, axis=1, negate=True)
    nisa.activation(
        dst=scores, op=nl.exp, data=scores, bias=row_max, reduce_op=nl.add, reduce_res=row_sum
    )
    nisa.reciprocal(dst=row_sum, data=row_sum)

    probs_t_p = nl.ndarray((seq_k, seq_q), nl.float32, buffer=nl.psum)
    probs_t = nl.ndarray((seq_k, seq_q), v.dtype, buffer=nl.sbuf)
    v_s = nl.ndarray((seq_k, d), v.dtype, buffer=nl.sbuf)
    nisa.nc_transpose(dst=probs_t_p, data=scores)
    nisa.tensor_copy(dst=probs_t, src=probs_t_p)
    nisa.dma_copy(dst=v_s, src=v)

    ctx_p = nl.ndarray((seq_q, d), nl.float32, buffer=nl.psum)
    ctx = nl.ndarray((seq_q, d), v.dtype, buffer=nl.sbuf)
    nisa.nc_matmul(dst=ctx_p, stationary=probs_t, moving=v_s)
    nisa.tensor_scalar(dst=ctx, data=ctx_p, op0=nl.multiply, operand0=row_sum)
    nisa.dma_copy(dst=out, src=ctx)
    return out
