import nki
import nki.language as nl
import nki.isa as nisa


# Every remaining nl element-wise function: binary arithmetic and
# comparisons, logical and bitwise operators, and the activation-backed
# unary functions; plus a register sum (reg_alu) and a reinterpreting view.
# nkic: args x=float32[128,64] y=float32[128,64] m=uint8[128,64] k=int32[128,64] n=int32[1,1]
@nki.jit
def everything(x, y, m, k, n):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    a = nl.load(x)
    b = nl.load(y)
    mm = nl.load(m)
    kk = nl.load(k)
    binary = [nl.maximum(a, b), nl.minimum(a, 2.0), nl.abs_max(a, b), nl.abs_min(a, b),
              nl.equal(a, b), nl.not_equal(a, 0.0), nl.greater(a, b), nl.less(a, b),
              nl.less_equal(a, 1.0)]
    logic = [nl.logical_and(mm, mm), nl.logical_or(mm, mm), nl.logical_xor(mm, mm)]
    bits = [nl.bitwise_or(kk, kk), nl.bitwise_xor(kk, 3), nl.left_shift(kk, 2),
            nl.right_shift(kk, 1)]
    unary = [nl.log(a), nl.tanh(a), nl.sigmoid(a), nl.relu(a), nl.gelu(a), nl.gelu_dx(a),
             nl.gelu_apprx_tanh(a), nl.gelu_apprx_sigmoid(a), nl.gelu_apprx_sigmoid_dx(a),
             nl.silu(a), nl.silu_dx(a), nl.softplus(a), nl.mish(a), nl.erf(a), nl.erf_dx(a),
             nl.sqrt(a), nl.arctan(a), nl.sign(a), nl.abs(a), nl.sin(a)]
    lo = nl.min(a, axis=1)
    every = nl.all(mm, axis=1)
    as_int = a.reinterpret_cast(nl.int32)
    n_sb = nl.load(n)
    r = nisa.register_alloc()
    nisa.register_load(r, n_sb)
    s = nisa.register_alloc(4)
    total = r + s
    nisa.register_store(n_sb, total)
    print(len(binary), len(logic), len(bits), len(unary), lo.shape, every.shape, as_int.dtype)
    nl.store(out, unary[0])
    return out
