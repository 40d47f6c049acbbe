# expect: E0505
import nki
import nki.language as nl
import numpy as np


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    c = nl.shared_constant(np.ones((128, 4), dtype=np.float32), dtype=nl.float8_e4m3fn_x4)
