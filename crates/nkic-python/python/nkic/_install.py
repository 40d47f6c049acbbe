"""Activating the drop-in namespaces: ``nki``, ``nki.*``, ``neuronxcc`` and
``neuronxcc.nki.*`` imported from nkic.

Nothing is shadowed unless asked: ``nkic.install()``, ``pytest -p
nkic.pytest``, or ``NKI_SIMULATOR=nkic`` in the environment (the package's
``nkic_simulator.pth`` start-up hook checks that variable and imports
nothing otherwise). Once active, an import finder placed first on
``sys.meta_path`` maps ``nki.X`` to ``nkic.nki.X`` and ``neuronxcc`` to
``nkic._neuronxcc``, so the same module objects serve both names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from typing import Any, Optional, Sequence

__all__ = ["install", "uninstall", "installed"]

_PREFIXES = (
    ("neuronxcc.nki", "nkic.nki"),
    ("neuronxcc", "nkic._neuronxcc"),
    ("nki", "nkic.nki"),
)


def _real_name(fullname: str) -> Optional[str]:
    for alias, real in _PREFIXES:
        if fullname == alias or fullname.startswith(alias + "."):
            return real + fullname[len(alias):]
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, real: str) -> None:
        self.real = real
        self._spec: Any = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        module = importlib.import_module(self.real)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: Any) -> None:
        # The module keeps its own spec: it is `nkic.nki...` under both names.
        module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Any = None) -> Optional[importlib.machinery.ModuleSpec]:
        real = _real_name(fullname)
        if real is None:
            return None
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            found = None
        if found is None:
            return None
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(real), is_package=found.submodule_search_locations is not None
        )


_finder = _AliasFinder()


def install() -> None:
    """Makes ``import nki`` / ``import neuronxcc.nki`` (and their
    submodules) import nkic's namespaces, so existing NKI code runs on
    nkic unmodified. Modules already imported under those names by a
    real Neuron installation are replaced."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    for name in list(sys.modules):
        if _real_name(name) is not None and not getattr(sys.modules[name], "__name__", "").startswith("nkic"):
            del sys.modules[name]


def uninstall() -> None:
    """Undoes :func:`install` (modules already imported stay imported)."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in list(sys.modules):
        if _real_name(name) is not None:
            del sys.modules[name]


def installed() -> bool:
    """Whether the drop-in namespaces are active."""
    return _finder in sys.meta_path
