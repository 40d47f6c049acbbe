# expect: E0227
import nki
import nki.language as nl


# An inner dynamic loop cannot advance the outer loop's induction register.
# nkic: args x=float32[1024,512]
@nki.jit
def bump(x):
    res = nl.ndarray((1024, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.dynamic_range(0, 4):
        for j in nl.dynamic_range(0, 2):
            t = nl.load(x[nl.ds(i * 256 + j * 128, 128), :])
            nl.store(res[nl.ds(i * 256 + j * 128, 128), :], t)
            i = i + 1
    return res
