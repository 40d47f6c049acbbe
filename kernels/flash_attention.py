"""Causal self-attention forward pass, flash style (one head).

out = softmax(mask(Q @ K.T / sqrt(d))) @ V with the causal mask keeping key
j for query i only when j <= i. Q, K and V are [S, d]; the kernel takes Q
and K transposed, q_t and k_t of shape [d, S], so the head dim is the
contraction (partition) dim of the score matmul. S must be a multiple of
128 and d at most 128; any float dtype works for the inputs, and the
output has q_t's dtype.

The score matrix is never materialized: for each tile of 128 queries the
kernel walks the key blocks of up to 512 keys that lie on or below the
diagonal (blocks above it are skipped entirely) and keeps an online
softmax per query row: the running maximum m, the running sum l of
exp(s - m) and the unnormalized output acc. For each key block:
  1. scores s = q_tile.T @ k_block on the Tensor engine (PSUM), evicted to
     SBUF already multiplied by 1/sqrt(d);
  2. on the block that crosses the diagonal, nisa.affine_select replaces
     the scores of keys after the query by -3e38;
  3. m_new = max(m, rowmax(s)); p = exp(s - m_new) with its row sums from
     the same nisa.activation_reduce; the correction c = exp(m - m_new);
  4. p is transposed 128 keys at a time on the Tensor engine and
     multiplied by the matching rows of V, accumulating p @ V in PSUM;
  5. l = l * c + rowsum(p) and acc = acc * c + p @ V
     (nisa.scalar_tensor_tensor does each in one instruction).
Finally out = acc / l. K and V are loaded into SBUF once.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args q_t=bfloat16[64,1024] k_t=bfloat16[64,1024] v=bfloat16[1024,64]
@nki.jit
def flash_attention(q_t, k_t, v):
    d, S = q_t.shape
    P = nl.tile_size.pmax
    assert k_t.shape == (d, S) and v.shape == (S, d), "q_t, k_t are [d, S] and v is [S, d]"
    assert d <= P and S % P == 0, "d <= 128 and S a multiple of 128"
    KB = nl.tile_size.gemm_moving_fmax
    scale = 1.0 / (d ** 0.5)
    out = nl.ndarray((S, d), dtype=q_t.dtype, buffer=nl.shared_hbm)

    # All of Q.T and K.T ([d, S]) and V as [128, S/128, d] stay in SBUF.
    q_all = nl.ndarray((d, S), dtype=q_t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=q_all, src=q_t)
    k_all = nl.ndarray((d, S), dtype=k_t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=k_all, src=k_t)
    v_all = nl.ndarray((P, S // P, d), dtype=v.dtype, buffer=nl.sbuf)
    for t in range(S // P):
        nisa.dma_copy(dst=v_all[:, t, :], src=v[nl.ds(t * P, P), :])

    for qi in range(S // P):
        q0 = qi * P
        m = None
        l = None
        acc = None
        for kb in range((q0 + P - 1) // KB + 1):
            k0 = kb * KB
            kn = min(KB, S - k0)
            s_psum = nl.ndarray((P, kn), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=s_psum, stationary=q_all[:, nl.ds(q0, P)], moving=k_all[:, nl.ds(k0, kn)])
            s = nl.ndarray((P, kn), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=s, op=nl.copy, data=s_psum, scale=scale)
            if k0 + kn > q0 + 1:
                # Keep key k0 + f for query q0 + p only when (q0 - k0) + p - f >= 0.
                nisa.affine_select(dst=s, pattern=[[-1, kn]], channel_multiplier=1,
                                   on_true_tile=s, on_false_value=-3.0e38,
                                   cmp_op=nl.greater_equal, offset=q0 - k0)
            blk_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=blk_max, op=nl.maximum, data=s, axis=1, keepdims=True)
            if m is None:
                m_new = blk_max
            else:
                m_new = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_tensor(dst=m_new, data1=m, data2=blk_max, op=nl.maximum)
            neg_m = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=neg_m, data=m_new, op0=nl.multiply, operand0=-1.0)
            p = nl.ndarray((P, kn), dtype=v.dtype, buffer=nl.sbuf)
            p_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation_reduce(dst=p, op=nl.exp, data=s, reduce_op=nl.add, reduce_res=p_sum, bias=neg_m)

            # p @ V over the 128-key sub-blocks that hold any unmasked key.
            pv = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.psum)
            n_sub = min(kn, q0 + P - k0) // P
            for sb in range(n_sub):
                pt_psum = nl.ndarray((P, P), dtype=v.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=pt_psum, data=p[:, nl.ds(sb * P, P)], engine=nisa.engine.tensor)
                pt = nl.ndarray((P, P), dtype=v.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=pt, src=pt_psum)
                nisa.nc_matmul(dst=pv, stationary=pt, moving=v_all[:, k0 // P + sb, :], accumulate=(sb != 0))

            if m is None:
                l = p_sum
                acc = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_copy(dst=acc, src=pv)
            else:
                corr = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=corr, op=nl.exp, data=m, bias=neg_m)
                l_new = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.scalar_tensor_tensor(dst=l_new, data=l, op0=nl.multiply, operand0=corr,
                                          op1=nl.add, operand1=p_sum)
                acc_new = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
                nisa.scalar_tensor_tensor(dst=acc_new, data=acc, op0=nl.multiply, operand0=corr,
                                          op1=nl.add, operand1=pv)
                l = l_new
                acc = acc_new
            m = m_new

        inv_l = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv_l, data=l)
        o = nl.ndarray((P, d), dtype=out.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o, data=acc, op0=nl.multiply, operand0=inv_l)
        nisa.dma_copy(dst=out[nl.ds(q0, P), :], src=o)
    return out
