"""The exceptions and warnings of the ``nkic`` package.

Every error nkic reports about a kernel is an exception carrying nkic's
diagnostics: ``str(err)`` is the rendered report (no colour, as
``nkic check`` prints it to a file), and ``err.diagnostics`` is the list
of the same records ``--message-format json`` prints, one ``dict`` each.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence

__all__ = [
    "NkicError",
    "CompileError",
    "SimulationError",
    "OutOfBoundsError",
    "NkicWarning",
]


class NkicError(Exception):
    """The base class of nkic's errors about a kernel."""

    #: The diagnostics, one JSON record (as a ``dict``) each.
    diagnostics: List[Dict[str, Any]]

    def __init__(self, rendered: str, records: Sequence[str] = ()) -> None:
        super().__init__(rendered.rstrip("\n"))
        self.diagnostics = [json.loads(r) for r in records]

    @property
    def codes(self) -> List[str]:
        """The diagnostic codes, in order (``["E0501", ...]``)."""
        return [d.get("code", "") for d in self.diagnostics]


class CompileError(NkicError):
    """The kernel does not compile: a syntax, specialization or backend
    error (``nkic check`` would report the same diagnostics)."""


class SimulationError(NkicError):
    """The kernel compiled but faulted at run time in the simulator; the
    diagnostic names the kernel source line that caused it."""


class OutOfBoundsError(SimulationError, IndexError):
    """An access outside a tensor (E2001). Also an :class:`IndexError`, as
    NumPy raises for the same mistake on the host."""


class NkicWarning(UserWarning):
    """A warning nkic reported while compiling or running a kernel; the
    message is the rendered diagnostic."""
