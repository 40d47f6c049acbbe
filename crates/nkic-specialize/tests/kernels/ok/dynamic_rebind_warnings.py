import nki
import nki.isa as nisa
import nki.language as nl


# A name read in a dynamic loop body and then rebound there does not carry
# to the next iteration (the body is compiled once): E0232 warnings for
# the tile `acc` and the int `j`. `acc2 += t` writes into the tile and
# `t` is first bound in the body, so both are quiet.
# nkic: args x=float32[1024,512] n=int32[1,1]
@nki.jit
def meta(x, n):
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nisa.register_alloc(0)
    nisa.register_load(r, n)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    acc2 = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    j = 0
    for i in nl.dynamic_range(0, r):
        t = nl.load(x[nl.ds(i * 128, 128), :])
        acc = nl.add(acc, t)
        acc2 += t
        t = nl.multiply(t, 2.0)
        j = j + 1
    nl.store(res, nl.add(acc, acc2))
    return res
