# expect: E0260
# budget: steps=100000
import nki


def f(n):
    if n == 0:
        return 1
    return f(n - 1) + f(n - 1)


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    f(30)
