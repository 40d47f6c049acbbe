import nki
import nki.language as nl


# Public kernels still pass `mode=` and `platform_target=` to `nki.jit`.
# `mode=` is accepted silently; a `platform_target=` other than the target
# being compiled for (trn3 by default) is a warning E0221 at the keyword.
# nkic: args a=float32[128,512]
@nki.jit(mode="simulation", platform_target="trn2")
def k(a):
    res = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(res, nl.load(a))
    return res
