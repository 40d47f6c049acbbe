# expect: E0223
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    print(f"{x.shape[0]:.2s}")
