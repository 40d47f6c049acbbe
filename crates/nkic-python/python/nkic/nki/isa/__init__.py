"""``nki.isa`` (``nisa``) for host code under nkic: the enums of ``isa.md``
§1 as enum members a kernel can be passed, and every other name as a
token (``nisa.activation``)."""

from __future__ import annotations

from ..._tokens import Token, enum_tokens, spelled

engine = enum_tokens(
    "nisa", "engine", {"unknown": 0, "tensor": 1, "scalar": 2, "gpsimd": 3, "dma": 4, "vector": 5, "sync": 6}
)
reduce_cmd = enum_tokens(
    "nisa", "reduce_cmd", {"idle": 0, "reset": 1, "reduce": 2, "reset_reduce": 3, "load_reduce": 4}
)
dge_mode = enum_tokens("nisa", "dge_mode", {"unknown": 0, "swdge": 1, "hwdge": 2, "none": 3})
oob_mode = enum_tokens("nisa", "oob_mode", {"error": 0, "skip": 1})
matmul_perf_mode = enum_tokens("nisa", "matmul_perf_mode", {"none": "none", "double_row": "double_row"})
nc_version = enum_tokens("nisa", "nc_version", {"gen2": 2, "gen3": 3, "gen4": 4})
dma_engine = enum_tokens("nisa", "dma_engine", {"dma": 1, "gpsimd_dma": 2})

tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


class NkiValidationError(Exception):
    """A hardware constraint was violated (raised by NKI's own tools; nkic
    reports these as :class:`nkic.CompileError`)."""


def __getattr__(name: str) -> Token:
    if name.startswith("__"):
        raise AttributeError(name)
    return spelled("nisa", name)
