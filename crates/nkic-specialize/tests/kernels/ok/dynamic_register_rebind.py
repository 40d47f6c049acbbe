import nki
import nki.isa as nisa
import nki.language as nl


# A name holding a register before a dynamic loop and rebound in its body
# to register arithmetic (or an int) writes the register: `r = r - 1` and
# `i = i + 1` become `reg_alu` into r and i, `k = 0` a `reg_move`, so the
# `while r:` loop ends and `i` advances per iteration. A name first bound
# in the body (`off`) keeps Python's meaning and needs no op.
# nkic: args x=float32[1024,512] n=int32[1,1]
@nki.jit
def rebind(x, n):
    res = nl.ndarray((1024, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nisa.register_alloc(0)
    nisa.register_load(r, n)
    i = nisa.register_alloc(0)
    k = nisa.register_alloc(5)
    while r:
        off = i * 128
        off = off + 0
        t = nl.load(x[nl.ds(off, 128), :])
        nl.store(res[nl.ds(off, 128), :], t)
        i = i + 1
        r = r - 1
        k = 0
    for j in nl.dynamic_range(0, 2):
        k = 2 * k + j
    return res
