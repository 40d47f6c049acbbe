"""``nki.typing`` for host code: the annotation types, subscriptable and
otherwise inert (nkic reads a kernel's types from its arguments)."""

from __future__ import annotations

from typing import Any


class _Annotation:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getitem__(self, item: Any) -> "_Annotation":
        return self

    def __repr__(self) -> str:
        return f"nki.typing.{self._name}"


tensor = _Annotation("tensor")
scalar = _Annotation("scalar")
mutable_tensor = _Annotation("mutable_tensor")


def __getattr__(name: str) -> _Annotation:
    if name.startswith("__"):
        raise AttributeError(name)
    return _Annotation(name)
