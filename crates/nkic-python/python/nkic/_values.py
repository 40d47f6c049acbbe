"""Compile-time arguments: Python objects as the Python expressions the
specializer evaluates in the kernel's module scope.

A kernel's non-tensor arguments are values of the meta-language (ints,
floats, dtypes, operator tokens, enum members, dataclass configs, ...).
They cross into nkic as source text — the same text ``--const NAME=EXPR``
takes on the command line — so that the command line, ``nkic.toml`` and
this package pass values one way (``docs/python.md``). Names are written
as the kernel's module sees them: a class the module imported is named by
its name there, anything else by its module path
(``pkg.mod.Config(eps=1e-06, act=pkg.enums.Act.SILU)``).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import types
from typing import Any, Dict, List, Optional

import numpy as np

from . import _dtypes

__all__ = ["to_expr"]

#: Attribute naming the expression of an ``nki``/``nl``/``nisa`` token of
#: the drop-in namespaces (``nl.add`` -> ``"nl.add"``).
EXPR_ATTR = "_nkic_expr"

_MAX_DEPTH = 64


class _Scope:
    """How the kernel's module names things."""

    def __init__(
        self, module_globals: Dict[str, Any], module_name: str, files: Optional[List[str]]
    ) -> None:
        self.module_name = module_name
        self.files = files
        self.by_id: Dict[int, str] = {}
        for name, value in module_globals.items():
            if not name.startswith("__"):
                self.by_id.setdefault(id(value), name)

    def name_of(self, obj: Any, what: str) -> str:
        local = self.by_id.get(id(obj))
        if local is not None:
            return local
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if (
            module
            and qualname
            and module != "__main__"
            and module != self.module_name
            and "<locals>" not in qualname
        ):
            return f"{module}.{qualname}"
        if module == self.module_name and qualname and "<locals>" not in qualname:
            return qualname
        raise TypeError(
            f"cannot pass {what} {qualname or obj!r}: the kernel's module does not name it "
            "(import it into the kernel's module, or define it at the top level of an importable module)"
        )


def _float(x: float) -> str:
    if math.isnan(x):
        return "float('nan')"
    if math.isinf(x):
        return "float('inf')" if x > 0 else "-float('inf')"
    return repr(float(x))


def to_expr(
    value: Any,
    module_globals: Dict[str, Any],
    module_name: str,
    files: Optional[List[str]] = None,
) -> str:
    """``value`` as a Python expression for the kernel's module scope, or
    ``TypeError`` naming what cannot be passed. Every string in it that
    names an existing ``.npy`` file is appended to ``files`` (the kernel
    may embed the file with ``nl.shared_constant(path)``)."""
    return _expr(value, _Scope(module_globals, module_name, files), 0)


def _expr(v: Any, scope: _Scope, depth: int) -> str:
    if depth > _MAX_DEPTH:
        raise TypeError("a compile-time argument nests too deeply")
    expr = getattr(v, EXPR_ATTR, None)
    if isinstance(expr, str):
        return expr
    if v is None or isinstance(v, bool):
        return repr(v)
    if isinstance(v, enum.Enum):
        # Before int: an IntEnum member is an int too.
        cls = scope.name_of(type(v), "the enum")
        return f"{cls}.{v.name}"
    if isinstance(v, int):
        return repr(int(v))
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, str):
        if scope.files is not None and v.endswith(".npy") and os.path.isfile(v):
            scope.files.append(v)
        return repr(v)
    if isinstance(v, np.bool_):
        return repr(bool(v))
    if isinstance(v, np.integer):
        return repr(int(v))
    if isinstance(v, np.floating):
        return _float(float(v))
    if isinstance(v, tuple):
        items = [_expr(x, scope, depth + 1) for x in v]
        if len(items) == 1:
            return f"({items[0]},)"
        return "(" + ", ".join(items) + ")"
    if isinstance(v, list):
        return "[" + ", ".join(_expr(x, scope, depth + 1) for x in v) + "]"
    if isinstance(v, dict):
        return (
            "{"
            + ", ".join(
                f"{_expr(k, scope, depth + 1)}: {_expr(x, scope, depth + 1)}"
                for k, x in v.items()
            )
            + "}"
        )
    dtype = _dtype_name(v)
    if dtype is not None:
        return f"nl.{dtype}"
    if isinstance(v, np.ufunc):
        return f"np.{v.__name__}"
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        cls = scope.name_of(type(v), "the dataclass")
        args = [
            f"{f.name}={_expr(getattr(v, f.name), scope, depth + 1)}"
            for f in dataclasses.fields(v)
            if f.init
        ]
        return f"{cls}({', '.join(args)})"
    if isinstance(v, (types.FunctionType, type)):
        return scope.name_of(v, "the function" if callable(v) else "the object")
    raise TypeError(
        f"cannot pass a {type(v).__module__}.{type(v).__qualname__} to a kernel: "
        "compile-time arguments are ints, floats, bools, None, strings, tuples, lists and "
        "dicts of them, NumPy scalars, dtypes, operators (nl.add, np.add), enum members and "
        "dataclass instances; tensors are NumPy arrays or torch CPU tensors"
    )


def _dtype_name(v: Any) -> Optional[str]:
    """nkic's name of a dtype object (NumPy type or dtype, ``ml_dtypes``
    type, torch dtype), or ``None`` when ``v`` is not one."""
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        name = _dtypes.nkic_name(v)
        if name is None:
            raise TypeError(f"nkic has no dtype {np.dtype(v).name}")
        return name
    if type(v).__name__ == "dtype" and type(v).__module__ == "torch":
        name = _dtypes.torch_name(v)
        if name is None:
            raise TypeError(f"nkic has no dtype {v}")
        return name
    return None
