import nki.isa as nisa
import nki.language as nl


def helper_a(x):
    y = x +
    return y


def helper_b(x):
    z = [x for x in]
    return z


def helper_c(x):
    w = x * * 2
    return w
