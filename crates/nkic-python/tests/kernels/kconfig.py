"""Configuration types a kernel module imports: an enum and dataclasses."""
import enum
from dataclasses import dataclass

import nki.language as nl


class Act(enum.Enum):
    COPY = 0
    RELU = 1


@dataclass(frozen=True)
class Scaling:
    scale: float = 1.0
    shift: float = 0.0


@dataclass(frozen=True)
class Constants(nl.NKIObject):
    """Paths of `.npy` files the host saved before the call, by name (as
    production kernels pass their precomputed constants in an NKIObject
    dataclass)."""

    files: dict
