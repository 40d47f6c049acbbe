# expect: E0221
import nki
import nki.language as nl


# `platform_target=` (and `mode=`) were removed from `nki.jit` in NKI 0.3;
# passing one is an error (language.md §3.1), which names the replacement.
# nkic: args a=float32[128,512]
@nki.jit(platform_target="trn2")
def k(a):
    res = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(res, nl.load(a))
    return res
