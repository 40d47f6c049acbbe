# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args h=bfloat16[128,64]
@nki.jit
def k(h):
    src = nl.load(h)
    q = nl.ndarray((128, 64), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    sc = nl.ndarray((128, 16), nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=q, src=src, dst_scale=sc)
    return h
