"""``nki.language`` (``nl``) for host code under nkic: dtypes (NumPy and
``ml_dtypes`` dtypes), buffers, ``tile_size`` and the fp32 limits, and every
other name as a token a kernel can be passed (``nl.add``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dtypes import ML_DTYPES
from .._tokens import spelled

float32 = np.float32
float16 = np.float16
int8 = np.int8
int16 = np.int16
int32 = np.int32
uint8 = np.uint8
uint16 = np.uint16
uint32 = np.uint32
bool_ = np.bool_
tfloat32 = spelled("nl", "tfloat32")
float8_e4m3fn_x4 = spelled("nl", "float8_e4m3fn_x4")
float8_e5m2_x4 = spelled("nl", "float8_e5m2_x4")
float4_e2m1fn_x4 = spelled("nl", "float4_e2m1fn_x4")


class _Limits:
    def __init__(self, dtype: Any) -> None:
        info = np.finfo(dtype)
        self.min = info.min.item() if hasattr(info.min, "item") else float(info.min)
        self.max = info.max.item() if hasattr(info.max, "item") else float(info.max)


fp32 = _Limits(np.float32)
fp16 = _Limits(np.float16)


class NKIObject:
    """``nl.NKIObject``: the base of the configuration classes kernels take
    (dataclasses whose instances are passed by value). A plain class on the
    host, so kernel libraries can subclass it."""


class tile_size:
    """The tile limits of ``language.md`` §8 that do not depend on the target."""

    pmax = 128
    psum_bank_fmax = 512
    psum_fmax = 512
    psum_bank_fmax_bytes = 2048
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1


class nc:
    """``nl.nc(k)``: a launch dimension spread over ``k`` NeuronCores;
    ``nl.nc(k) * n`` is ``nl.spmd_dim(nl.nc(k), n)``."""

    def __init__(self, cores: int) -> None:
        self._nkic_nc = int(cores)

    def __mul__(self, size: int) -> "spmd_dim":
        return spmd_dim(self, size)

    __rmul__ = __mul__


class spmd_dim:
    """``nl.spmd_dim(n, nl.nc(k))`` or ``nl.spmd_dim(nl.nc(k), n)``: ``n``
    instances on each of ``k`` cores (the order decides which instances
    share a core; the results do not depend on it)."""

    def __init__(self, first: Any, second: Any) -> None:
        cores, size = (first, second) if isinstance(first, nc) else (second, first)
        if not isinstance(cores, nc):
            raise TypeError("nl.spmd_dim takes a size and an nl.nc(k)")
        self.size = int(size)
        self._nkic_cores = cores._nkic_nc


def static_cast(x: Any, dtype: Any) -> Any:
    """Host code's ``nl.static_cast(array, dtype)``: NumPy's ``astype``
    (inside a kernel nkic's specializer implements it)."""
    return np.asarray(x).astype(dtype)


def __getattr__(name: str) -> Any:
    # The ml_dtypes dtypes (and bf16's limits) load ml_dtypes on first use.
    if name in ML_DTYPES or name == "bf16":
        import ml_dtypes

        value: Any = (
            _Limits(ml_dtypes.bfloat16) if name == "bf16" else getattr(ml_dtypes, name)
        )
        globals()[name] = value
        return value
    if name.startswith("__"):
        raise AttributeError(name)
    return spelled("nl", name)
