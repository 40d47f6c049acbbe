"""A second module of the cfgpkg fixture package."""
from enum import Enum


class Mode(Enum):
    FAST = "fast"
    EXACT = "exact"
