"""The selective-scan (SSM) step of a Mamba layer in three versions, after
the versions whose trn1 profiles the fused-Mamba tutorial published (see
docs/cycle-model.md, "Published measurements"). The code is nkic's own.

delta, u: [batch, channels, seq]; a: [channels, states]; b, c: [batch,
states, seq]. For every channel and state s:
    h[t] = exp(delta[t] * a[s]) * h[t-1] + delta[t] * u[t] * b[s, t]
    out[t] += c[s, t] * h[t]

* `ssm_v1`: states outside channel tiles; delta and u are loaded again for
  every state, and all channel tiles' accumulators stay live.
* `ssm_v2`: channel tiles outside states; delta and u are loaded once per
  channel tile and reused by every state.
* `ssm_v3`: as v2, with the sequence cut into 512-long pieces carried by
  the scan's initial value, so the per-state temporaries stay small.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args delta=float32[1,256,512] u=float32[1,256,512] a=float32[256,16] b=float32[1,16,512] c=float32[1,16,512]
@nki.jit
def ssm_v1(delta, u, a, b, c):
    nb, ch, seq = delta.shape
    _, ns = a.shape
    P = nl.tile_size.pmax
    nt = ch // P
    out = nl.ndarray((nb, ch, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    for bi in nl.affine_range(nb):
        acc = nl.zeros((nt, nl.par_dim(P), seq), dtype=delta.dtype)
        for s in nl.affine_range(ns):
            for t in nl.affine_range(nt):
                rows = nl.ds(t * P, P)
                d = nl.load(delta[bi, rows, 0:seq])
                a_s = nl.load(a[rows, s])
                decay = nisa.activation(op=nl.exp, data=d, scale=a_s)
                x = nl.load(u[bi, rows, 0:seq])
                b_s = nl.load(b[bi, s:s + 1, 0:seq])
                du = nisa.tensor_tensor(d, x, op=nl.multiply)
                dbu = nisa.tensor_tensor(du, b_s.broadcast_to((P, seq)), op=nl.multiply)
                h = nisa.tensor_tensor_scan(decay, dbu, initial=0, op0=nl.multiply, op1=nl.add)
                c_s = nl.load(c[bi, s:s + 1, 0:seq])
                hc = nisa.tensor_tensor(h, c_s.broadcast_to((P, seq)), op=nl.multiply)
                acc[t, 0:P, 0:seq] += hc
        for t in nl.affine_range(nt):
            nl.store(out[bi, nl.ds(t * P, P), 0:seq], acc[t, 0:P, 0:seq])
    return out


# nkic: args delta=float32[1,256,512] u=float32[1,256,512] a=float32[256,16] b=float32[1,16,512] c=float32[1,16,512]
@nki.jit
def ssm_v2(delta, u, a, b, c):
    nb, ch, seq = delta.shape
    _, ns = a.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((nb, ch, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    for bi in nl.affine_range(nb):
        for t in nl.affine_range(ch // P):
            rows = nl.ds(t * P, P)
            acc = nl.zeros((nl.par_dim(P), seq), dtype=delta.dtype)
            d = nl.load(delta[bi, rows, 0:seq])
            x = nl.load(u[bi, rows, 0:seq])
            for s in nl.affine_range(ns):
                a_s = nl.load(a[rows, s])
                decay = nisa.activation(op=nl.exp, data=d, scale=a_s)
                b_s = nl.load(b[bi, s:s + 1, 0:seq])
                du = nisa.tensor_tensor(d, x, op=nl.multiply)
                dbu = nisa.tensor_tensor(du, b_s.broadcast_to((P, seq)), op=nl.multiply)
                h = nisa.tensor_tensor_scan(decay, dbu, initial=0, op0=nl.multiply, op1=nl.add)
                c_s = nl.load(c[bi, s:s + 1, 0:seq])
                hc = nisa.tensor_tensor(h, c_s.broadcast_to((P, seq)), op=nl.multiply)
                acc[0:P, 0:seq] += hc
            nl.store(out[bi, rows, 0:seq], acc[0:P, 0:seq])
    return out


# nkic: args delta=float32[1,256,1024] u=float32[1,256,1024] a=float32[256,16] b=float32[1,16,1024] c=float32[1,16,1024]
@nki.jit
def ssm_v3(delta, u, a, b, c):
    nb, ch, seq = delta.shape
    _, ns = a.shape
    P = nl.tile_size.pmax
    F = 512
    out = nl.ndarray((nb, ch, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    for bi in nl.affine_range(nb):
        for t in nl.affine_range(ch // P):
            rows = nl.ds(t * P, P)
            acc = nl.zeros((nl.par_dim(P), seq), dtype=delta.dtype)
            d = nl.load(delta[bi, rows, 0:seq])
            x = nl.load(u[bi, rows, 0:seq])
            for s in nl.affine_range(ns):
                a_s = nl.load(a[rows, s])
                carry = nl.zeros((P, 1), dtype=delta.dtype)
                for j in nl.static_range(seq // F):
                    cols = nl.ds(j * F, F)
                    decay = nisa.activation(op=nl.exp, data=d[0:P, cols], scale=a_s)
                    b_s = nl.load(b[bi, s:s + 1, cols])
                    du = nisa.tensor_tensor(d[0:P, cols], x[0:P, cols], op=nl.multiply)
                    dbu = nisa.tensor_tensor(du, b_s.broadcast_to((P, F)), op=nl.multiply)
                    h = nisa.tensor_tensor_scan(decay, dbu, initial=carry, op0=nl.multiply, op1=nl.add)
                    carry[...] = h[0:P, F - 1]
                    c_s = nl.load(c[bi, s:s + 1, cols])
                    hc = nisa.tensor_tensor(h, c_s.broadcast_to((P, F)), op=nl.multiply)
                    acc[0:P, cols] += hc
            nl.store(out[bi, rows, 0:seq], acc[0:P, 0:seq])
    return out
