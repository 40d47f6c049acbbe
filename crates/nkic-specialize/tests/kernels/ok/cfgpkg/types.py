"""Configuration types for the const_exprs fixtures (enums, dataclasses)."""
from dataclasses import dataclass, field
from enum import Enum, IntEnum

import nki


class Act(Enum):
    RELU = 1
    SILU = 2
    GELU = 3


class Level(IntEnum):
    LOW = 1
    MID = 2
    HIGH = 3


@dataclass
class Cfg:
    eps: float = 1e-5
    n: int = 1
    act: Act = Act.RELU
    tags: list = field(default_factory=list)


@dataclass(frozen=True)
class Tile:
    rows: int
    cols: int = 64


class Shape(nki.language.NKIObject):
    def __init__(self, p, f=64):
        self.p = p
        self.f = f

    def size(self):
        return self.p * self.f
