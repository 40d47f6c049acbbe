"""Host-side stand-ins for NKI's names, for the drop-in namespaces.

Host code (a test, a launcher script) uses ``nl``/``nisa`` names as values:
dtypes in NumPy calls, constants (``nl.tile_size.pmax``, ``nl.fp32.min``),
operator tokens and enum members passed to a kernel (``nl.add``,
``nisa.reduce_cmd.load_reduce``). The kernel body itself never runs in
Python: nkic's specializer evaluates it. So every other name of these
modules is a :class:`Token` that only remembers how it is spelled, and
crosses into the kernel as that expression (``_values.EXPR_ATTR``).
"""

from __future__ import annotations

import enum
from typing import Any

from ._values import EXPR_ATTR


class Token:
    """An NKI API name seen from host code (``nl.exp``, ``nisa.activation``).

    It can be passed to a kernel (as the name it spells) and compared, but
    not called: NKI operations run only inside kernels."""

    def __init__(self, expr: str) -> None:
        object.__setattr__(self, EXPR_ATTR, expr)

    def __repr__(self) -> str:
        return getattr(self, EXPR_ATTR)

    def __getattr__(self, name: str) -> "Token":
        if name.startswith("__"):
            raise AttributeError(name)
        return Token(f"{getattr(self, EXPR_ATTR)}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{getattr(self, EXPR_ATTR)} is an NKI operation: it runs inside a kernel "
            "(a function decorated with @nki.jit), which nkic compiles; it cannot be called "
            "from host code"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Token) and getattr(other, EXPR_ATTR) == getattr(self, EXPR_ATTR)

    def __hash__(self) -> int:
        return hash(getattr(self, EXPR_ATTR))


class Directive(Token):
    """A compiler directive seen from host code (``nki.compiler.*``): used
    as a decorator, with or without arguments, it leaves the kernel as it
    is (nkic's specializer reads the directive from the source)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return lambda fn: fn

    def __getattr__(self, name: str) -> "Directive":
        if name.startswith("__"):
            raise AttributeError(name)
        return Directive(f"{getattr(self, EXPR_ATTR)}.{name}")


def spelled(module: str, name: str) -> Token:
    return Token(f"{module}.{name}")


def enum_tokens(module: str, name: str, members: dict) -> type:
    """An enum whose members cross into kernels as ``module.name.member``."""
    cls = enum.Enum(name, members)  # type: ignore[misc]
    for member in cls:  # type: ignore[attr-defined]
        object.__setattr__(member, EXPR_ATTR, f"{module}.{name}.{member.name}")
    cls.__module__ = f"nkic.nki.{'isa' if module == 'nisa' else 'language'}"
    return cls
