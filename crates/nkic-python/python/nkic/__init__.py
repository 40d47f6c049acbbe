"""nkic: compile, schedule and simulate NKI kernels in-process.

The same call the NKI simulator takes, compiled and scheduled by nkic, with
nkic's diagnostics and a cycle-level timeline::

    import nkic
    out = nkic.simulate(my_kernel)(a, b)          # NumPy or torch CPU arrays
    out = nkic.simulate(my_kernel)[2](a, b)       # a launch grid (LNC=2 for 2)
    c = nkic.compile(my_kernel, a, b); c.nkasm    # the pseudo-ISA, .ir, .report
    summary = nkic.profile(my_kernel, a, b, out_dir="prof")  # + trace.json, timeline.svg

Existing NKI code runs unmodified with ``NKI_SIMULATOR=nkic`` (or
``nkic.install()``, or ``pytest -p nkic.pytest``): the ``nki``,
``nki.language``, ``nki.isa``, ``nki.typing``, ``nki.collectives`` and
``neuronxcc.nki`` namespaces then come from nkic. ``docs/python.md`` is the
reference.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Union

from . import _native
from ._errors import CompileError, NkicError, NkicWarning, OutOfBoundsError, SimulationError
from ._kernel import Compiled, Kernel, TensorSpec, cache_info, clear_cache, tensor
from ._install import install, installed, uninstall

__version__: str = _native.__version__

__all__ = [
    "simulate",
    "jit",
    "compile",
    "profile",
    "check",
    "tensor",
    "install",
    "uninstall",
    "installed",
    "cache_info",
    "clear_cache",
    "Kernel",
    "Compiled",
    "TensorSpec",
    "NkicError",
    "CompileError",
    "SimulationError",
    "OutOfBoundsError",
    "NkicWarning",
]

KernelLike = Union[Callable[..., Any], Kernel]


def simulate(
    kernel: KernelLike,
    *,
    target: Optional[str] = None,
    lnc: Optional[int] = None,
    grid: Any = None,
    seed: int = 0,
    no_spill: bool = False,
) -> Kernel:
    """The kernel as a callable that compiles (once per argument signature)
    and runs it in nkic's simulator: ``nkic.simulate(k)(a, b)``.

    ``kernel`` is a Python function (its file and name are found with
    ``inspect``) or a ``nkic.jit``/``nki.jit`` wrapper. ``target`` is
    ``"trn3"``, ``"trn2"`` or ``"trn1"`` (default: ``NEURON_PLATFORM_TARGET_OVERRIDE``,
    else trn3); ``lnc`` overrides the cores of a launch; ``grid`` is the SPMD
    launch grid (or index the result: ``nkic.simulate(k)[2](a, b)``);
    ``seed`` fills tensor arguments given as :func:`nkic.tensor` specs;
    ``no_spill`` keeps the E0901/E0902 error for on-chip tensors that do not
    fit instead of spilling them (``nkic --no-spill``).
    The call returns the kernel's outputs as NumPy arrays (torch tensors
    for torch inputs) and updates tensor arguments the kernel writes in
    place.
    """
    base = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    changes: Dict[str, Any] = {"seed": seed, "compat": False, "no_spill": no_spill}
    if target is not None:
        changes["target"] = target
    if lnc is not None:
        changes["lnc"] = lnc
    if grid is not None:
        changes["grid"] = grid
    return base._replace(**changes)


def jit(fn: Optional[Callable[..., Any]] = None, **options: Any) -> Any:
    """Marks a kernel: ``@nkic.jit`` or ``@nkic.jit(target="trn2")``. The
    result is a :class:`Kernel`; calling it runs the kernel in nkic.

    Options of ``nki.jit`` that do not change what the kernel computes
    (``mode``, ``platform_target`` checked by the specializer, compiler
    flags) are accepted and ignored here."""
    known = {k: options[k] for k in ("target", "lnc", "grid", "seed", "no_spill") if k in options}

    def wrap(f: Callable[..., Any]) -> Kernel:
        return simulate(f, **known)

    return wrap if fn is None else wrap(fn)


def compile(kernel: KernelLike, *args: Any, target: Optional[str] = None, lnc: Optional[int] = None, grid: Any = None, seed: int = 0, **kwargs: Any) -> Compiled:
    """Compiles ``kernel`` for these arguments (arrays, or
    :func:`nkic.tensor` specs for shapes without data) without running it.
    The result has ``.nkasm``, ``.ir``, ``.report``, ``.warnings`` and
    ``.run(...)``; a kernel that does not compile raises
    :class:`CompileError`."""
    return simulate(kernel, target=target, lnc=lnc, grid=grid, seed=seed).compile(*args, **kwargs)


def check(kernel: KernelLike, *args: Any, target: Optional[str] = None, lnc: Optional[int] = None, grid: Any = None, **kwargs: Any) -> List[Dict[str, Any]]:
    """Checks that ``kernel`` compiles for these arguments, as ``nkic
    check`` does (capacity included). Returns the warnings as JSON records;
    errors raise :class:`CompileError`."""
    return compile(kernel, *args, target=target, lnc=lnc, grid=grid, **kwargs).warnings


def profile(kernel: KernelLike, *args: Any, out_dir: str = "nkic-profile", target: Optional[str] = None, lnc: Optional[int] = None, grid: Any = None, seed: int = 0, **kwargs: Any) -> Dict[str, Any]:
    """Runs ``kernel`` traced, writes ``OUT_DIR/trace.json`` (Perfetto,
    ``chrome://tracing``) and ``OUT_DIR/timeline.svg``, and returns the
    profile summary (the fields of ``nkic profile --format json``)."""
    k = simulate(kernel, target=target, lnc=lnc, grid=grid, seed=seed)._replace(trace_dir=out_dir)
    k(*args, **kwargs)
    assert k.last_report is not None
    return k.last_report
