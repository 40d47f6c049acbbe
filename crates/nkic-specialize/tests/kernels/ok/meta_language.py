"""Exercises the compile-time language: every construct prints its result."""
import itertools
import math
import operator
from functools import reduce
from dataclasses import dataclass, field
from enum import Enum, auto

import nki
import nki.language as nl
import nki.isa as nisa


class Mode(Enum):
    FAST = auto()
    SAFE = auto()


@dataclass
class Config(nl.NKIObject):
    tile: int = 128
    names: list = field(default_factory=list)
    mode: Mode = Mode.FAST

    def __post_init__(self):
        self.half = self.tile // 2

    @property
    def double(self):
        return self.tile * 2

    def describe(self, prefix="cfg"):
        return f"{prefix}:{self.tile}/{self.half}/{self.mode.name}"


class Base:
    def __init__(self, n):
        self.n = n

    def twice(self):
        return self.n * 2


class Derived(Base):
    def __init__(self, n, k):
        super().__init__(n)
        self.k = k

    def twice(self):
        return super().twice() + self.k


def make_adder(k):
    def add(x):
        return x + k
    return add


def counter():
    count = 0

    def bump():
        nonlocal count
        count += 1
        return count
    return bump


def varargs(*args, **kwargs):
    return len(args), sorted(kwargs.keys())


# nkic: args x=float32[128,64]
# nkic: consts scale=2.5
@nki.jit
def meta(x, scale, flag=True):
    cfg = Config(tile=64)
    print(cfg.describe(), cfg.double, cfg.mode == Mode.FAST, Mode.SAFE.value)
    print(Derived(3, 1).twice(), make_adder(5)(10), varargs(1, 2, a=1, b=2))
    bump = counter()
    bump()
    print("counter", bump())
    squares = [i * i for i in range(6) if i % 2 == 0]
    table = {f"k{i}": i for i in range(3)}
    print(squares, table, sum(squares), max(squares), min(3, 1, 2))
    print(7 // -2, -7 % 3, 2 ** 10, 7 / 2, divmod(17, 5), round(2.5), abs(-3))
    print(f"{scale:.3f} {math.sqrt(16.0)} {x.shape} {x.dtype} {1e-6} {[1, 'a', None]!r}")
    total = 0
    for i, (a, b) in enumerate(zip([1, 2, 3], "abc")):
        if a == 2:
            continue
        total += a
    else:
        print("no break", total)
    n = 0
    while n < 10:
        n += 3
        if n > 5:
            break
    print("while", n, [m.name for m in Mode], isinstance(cfg, Config), hasattr(cfg, "zz"))
    fs = [lambda v, k=k: v * k for k in range(3)]
    print([f(2) for f in fs], sorted([3, 1, 2], reverse=True), list(reversed((1, 2))))
    print(reduce(operator.mul, x.shape), list(itertools.product(range(2), "ab")), [*x.shape, 1])
    t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=x, src=t)
    assert flag, "flag must be set"
