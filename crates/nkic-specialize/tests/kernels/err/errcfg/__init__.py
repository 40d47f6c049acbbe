"""A configuration class for the const_expr_bad_field fixture."""
from dataclasses import dataclass


@dataclass
class Cfg:
    eps: float = 1e-5
    n: int = 1
