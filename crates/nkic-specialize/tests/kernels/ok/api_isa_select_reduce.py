import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,64] c=int32[128,16]
@nki.jit
def select_ops(a, c):
    out = nl.ndarray((1, 64), nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    ci = nl.load(c)
    col = nl.sum(x, axis=1)
    part = nisa.tensor_partition_reduce(op=nl.add, data=x)
    bits = nisa.tensor_partition_reduce(nl.bitwise_or, ci)
    acc = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    y = nisa.tensor_scalar_reduce(data=x, op0=nl.multiply, operand0=2.0, reduce_op=nl.maximum, reduce_res=acc)
    nisa.tensor_scalar_reduce(dst=y, data=x, op0=nl.add, operand0=col, reduce_op=nl.add,
                              reduce_res=acc, reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=1.0,
                              reduce_res_negate=True)
    top = nisa.max8(src=x)
    idx = nl.ndarray((128, 8), nl.uint32, buffer=nl.sbuf)
    rep = nisa.nc_match_replace8(data=x, vals=top, imm=-1.0, dst_idx=idx)
    lo = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    hi = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=lo, value=4.0)
    nisa.memset(dst=hi, value=20.0)
    rmax = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    sel = nisa.range_select(on_true_tile=x, comp_op0=nl.greater_equal, comp_op1=nl.less,
                            bound0=lo, bound1=hi, reduce_res=rmax, range_start=8)
    print(part.shape, bits.dtype, y.shape, rep.shape, sel.shape)
    nl.store(out, part)
    return out
