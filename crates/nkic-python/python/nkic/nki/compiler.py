"""``nki.compiler`` (``ncc``) for host code: allocation helpers and compiler
directives are used inside kernels, which nkic compiles; from host code
each name is a :class:`~nkic._tokens.Directive` (a decorator that leaves
the kernel as it is)."""

from __future__ import annotations

from .._tokens import Directive


def __getattr__(name: str) -> Directive:
    if name.startswith("__"):
        raise AttributeError(name)
    return Directive(f"ncc.{name}")
