"""``nki.collectives`` for host code: replica groups and the collective
operations as tokens a kernel can be passed; the operations themselves run
inside kernels."""

from __future__ import annotations

from typing import Sequence

from .._tokens import Token, spelled


class ReplicaGroup:
    """A group of ranks taking part in a collective."""

    def __init__(self, groups: Sequence[Sequence[int]]) -> None:
        self.groups = [list(g) for g in groups]
        self._nkic_expr = f"nki.collectives.ReplicaGroup({self.groups!r})"


def __getattr__(name: str) -> Token:
    if name.startswith("__"):
        raise AttributeError(name)
    return spelled("nki.collectives", name)
