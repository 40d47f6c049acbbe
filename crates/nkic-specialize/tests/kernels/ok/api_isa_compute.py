import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,64] b=float32[128,64]
@nki.jit
def isa_compute(a, b):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    r = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=r, data=x)
    m = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=x, axis=1)
    s = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    e = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.sbuf)
    nisa.exponential(dst=e, src=x, max_value=m, reduce_res=s, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    s2 = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    g = nisa.activation_reduce(op=nl.gelu, data=x, reduce_op=nl.add, reduce_res=s2, scale=2.0)
    t = nisa.scalar_tensor_tensor(data=x, op0=nl.multiply, operand0=m, op1=nl.add, operand1=y)
    sc = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor_scan(dst=sc, data0=x, data1=y, initial=0.0, op0=nl.multiply, op1=nl.add)
    pred = nl.ndarray((128, 64), nl.uint8, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=pred, data=x, op0=nl.greater, operand0=0.0)
    nisa.tensor_copy_predicated(dst=r, src=y, predicate=pred, reverse_pred=True)
    top = nisa.max8(src=x)
    idx = nisa.nc_find_index8(data=x, vals=top)
    st = nisa.bn_stats(data=x)
    mv = nl.ndarray((128, 2), nl.float32, buffer=nl.sbuf)
    nisa.bn_aggr(dst=mv, data=st)
    mx = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    sel = nisa.select_reduce(predicate=pred, on_true=x, on_false=-1.0, reduce_res=mx)
    print(g.shape, t.dtype, top.shape, idx.dtype, st.shape, sel.shape)
    nl.store(out, r)
    return out
