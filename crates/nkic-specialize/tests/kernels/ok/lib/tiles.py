import nki.language as nl
from .consts import P


def row_tiles(n):
    assert n % P == 0, f"{n} rows do not split into tiles of {P}"
    return [nl.ds(i * P, P) for i in range(n // P)]
