"""``nki.compiler`` (``ncc``) for host code: allocation helpers and compiler
directives are used inside kernels, which nkic compiles; from host code
each name is a token."""

from __future__ import annotations

from .._tokens import Token, spelled


def __getattr__(name: str) -> Token:
    if name.startswith("__"):
        raise AttributeError(name)
    return spelled("ncc", name)
