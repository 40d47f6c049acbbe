# expect: E0209
import nki
import nki.language as nl


def check_tile(n):
    assert n % 128 == 0, f"rows must be a multiple of 128, got {n}"


# nkic: args x=float32[200,64]
@nki.jit
def k(x):
    for i in range(2):
        check_tile(x.shape[0] + i)
