# expect: E0221
import nki
import nki.language as nl


# `platform_target=` must name a target; an unknown one is an error at the
# keyword (a known one that differs from --target is only a warning).
# nkic: args a=float32[128,512]
@nki.jit(platform_target="trn9")
def k(a):
    res = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(res, nl.load(a))
    return res
