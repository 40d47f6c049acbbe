import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,512]
@nki.jit
def activation(a):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    neg_max = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=x, axis=(1,), negate=True)
    e = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    total = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=x, bias=neg_max, reduce_op=nl.add, reduce_res=total, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    g = nisa.activation(op=nl.gelu_apprx_tanh, data=x, scale=0.5, bias=1.0)
    cp = nisa.activation(nl.copy, x, dtype=nl.bfloat16)
    s = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    y = nisa.activation(op=nl.square, data=x, reduce_res=s)
    print(g.shape, cp.dtype)
    nl.store(out, e)
    return out
