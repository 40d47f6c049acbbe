# expect: E0526
import nki
import nki.language as nl


# A tensor whose byte size does not fit in 63 bits (the IR's byte counts).
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    big = nl.ndarray((2147483647, 2147483647, 2147483647, 16), dtype=nl.float32, buffer=nl.shared_hbm)
    return big
