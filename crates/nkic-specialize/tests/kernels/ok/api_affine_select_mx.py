import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,128] h=bfloat16[128,64]
@nki.jit
def affine_mx(a, h):
    out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    causal = nisa.affine_select(pattern=[[-1, 128]], channel_multiplier=1, on_true_tile=x,
                                on_false_value=-9984.0, cmp_op=nl.greater_equal)
    m = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
    nisa.affine_select(dst=m, pattern=[[1, 128]], channel_multiplier=-1, on_true_tile=x,
                       on_false_value=0.0, offset=4)
    src = nl.load(h)
    q = nl.ndarray((128, 16), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    sc = nl.ndarray((128, 16), nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=q, src=src, dst_scale=sc)
    print(causal.shape, q.dtype)
    nl.store(out, causal)
    return out
