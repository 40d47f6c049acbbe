"""Dtypes between NumPy, ``ml_dtypes``, torch and nkic.

nkic names dtypes as NKI does (``docs/numerics.md``): ``float32``,
``bfloat16``, ``float8_e4m3``, ``bool_``, ... On the host the low-precision
floats are ``ml_dtypes`` dtypes, whose names are nkic's own.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import sys

import numpy as np

__all__ = ["to_numpy", "nkic_name", "LOW_PRECISION", "ML_DTYPES"]

#: nkic dtype name -> NumPy dtype of the host array that holds it, for the
#: dtypes NumPy has.
_NUMPY: Dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "bool_": np.dtype(np.bool_),
    # No host type: tfloat32 lives in 32 bits, the packed fp8/fp4 quadruples
    # in a uint32 each (docs/numerics.md); the host sees the raw words.
    "tfloat32": np.dtype(np.float32),
    "float8_e4m3fn_x4": np.dtype(np.uint32),
    "float8_e5m2_x4": np.dtype(np.uint32),
    "float4_e2m1fn_x4": np.dtype(np.uint32),
}

#: The dtypes held in ``ml_dtypes`` types of the same name. ``ml_dtypes`` is
#: imported the first time one is needed (its import takes about a
#: second), so a session that only uses NumPy's dtypes never pays for it.
ML_DTYPES = (
    "bfloat16",
    "float8_e4m3",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e8m0fnu",
)

#: The dtypes ``NKI_PRECISE_FP=0`` holds as float32, as the NKI simulator does.
LOW_PRECISION = frozenset(
    {"bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2"}
)

_FROM_NUMPY: Dict[np.dtype, str] = {}
for _name, _dt in _NUMPY.items():
    _FROM_NUMPY.setdefault(_dt, _name)


def _ml_dtypes() -> None:
    """Adds the ``ml_dtypes`` dtypes to the tables (once)."""
    if "bfloat16" in _NUMPY:
        return
    import ml_dtypes

    for name in ML_DTYPES:
        dt = np.dtype(getattr(ml_dtypes, name))
        _NUMPY[name] = dt
        _FROM_NUMPY.setdefault(dt, name)


def to_numpy(name: str) -> np.dtype:
    """The host dtype of nkic's dtype ``name``."""
    if name in ML_DTYPES:
        _ml_dtypes()
    return _NUMPY[name]


def nkic_name(dtype: Any) -> Optional[str]:
    """nkic's name of a NumPy/``ml_dtypes`` dtype or scalar type (``None``
    when nkic has no such dtype, e.g. float64)."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    name = _FROM_NUMPY.get(dt)
    # An ml_dtypes dtype exists only once its module is loaded.
    if name is None and "ml_dtypes" in sys.modules:
        _ml_dtypes()
        name = _FROM_NUMPY.get(dt)
    return name


def torch_name(dtype: Any) -> Optional[str]:
    """nkic's name of a torch dtype, without importing torch."""
    text = str(dtype)
    if not text.startswith("torch."):
        return None
    name = {
        "torch.float32": "float32",
        "torch.float": "float32",
        "torch.float16": "float16",
        "torch.half": "float16",
        "torch.bfloat16": "bfloat16",
        "torch.float8_e4m3fn": "float8_e4m3fn",
        "torch.float8_e5m2": "float8_e5m2",
        "torch.int8": "int8",
        "torch.int16": "int16",
        "torch.int32": "int32",
        "torch.uint8": "uint8",
        "torch.uint16": "uint16",
        "torch.uint32": "uint32",
        "torch.bool": "bool_",
    }.get(text)
    return name
