# expect: E0213
import nki


def f(n):
    return f(n + 1)


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    f(0)
