# expect: E0524
import nki
import nki.language as nl


# A path the kernel's own code did not save: nkic reads no file from disk.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    c = nl.shared_constant("/tmp/weights.npy")
