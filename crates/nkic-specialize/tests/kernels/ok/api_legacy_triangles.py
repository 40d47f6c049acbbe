import nki
import nki.language as nl
import nki.isa as nisa


# Triangular predicates: the legacy affine_select form (one affine_select
# per clause of the conjunction) and a triangular mask on a fresh result.
# nkic: args q=float32[128,128]
@nki.jit
def causal(q):
    out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    t = nl.load(q[i_p, i_f])
    lower = nisa.affine_select(pred=(i_f <= i_p), on_true_tile=t[i_p, i_f], on_false_value=-9984.0)
    band = nisa.affine_select((i_f <= i_p) & (i_p - i_f < 16), t, nl.fp32.min)
    e = nl.exp(band, mask=(i_p >= i_f))
    s = nl.add(lower, e)
    nl.store(out[i_p, i_f], s)
    return out
