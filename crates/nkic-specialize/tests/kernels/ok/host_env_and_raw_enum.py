import os
import sys
import nki
import nki.language as nl
import nki.isa as nisa

# Host-side set-up that kernel libraries run at import: the compile-time
# environment is empty, so these take their defaults.
_LEVELS = {k.lower(): v for k, v in os.environ.items() if k.startswith("MYLIB_")}
_LEVEL = os.getenv("MYLIB_LOG_LEVEL", "warning")
_DGE_NONE = 3


# nkic: args x=float32[128,64]
@nki.jit
def copy_with_raw_mode(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    print("levels", _LEVELS, _LEVEL, "MYLIB_X" in os.environ, file=sys.stderr)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x, dge_mode=_DGE_NONE)
    nisa.dma_copy(dst=out, src=t)
    return out
