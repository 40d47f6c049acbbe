"""A kernel whose compile-time evaluation nests past nkic's limit (3000
levels, E0262): each call of `deeper` nests a 60-term sum."""
import nki


def deeper(n):
    if n == 0:
        return 0
    return deeper(n - 1) + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1


@nki.jit
def nested(x):
    deeper(60)
    return x
