"""Configuration types a kernel module imports: an enum and a dataclass."""
import enum
from dataclasses import dataclass


class Act(enum.Enum):
    COPY = 0
    RELU = 1


@dataclass(frozen=True)
class Scaling:
    scale: float = 1.0
    shift: float = 0.0
