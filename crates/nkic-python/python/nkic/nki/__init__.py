"""The ``nki`` namespace as nkic provides it (``NKI_SIMULATOR=nkic``,
``nkic.install()``, ``pytest -p nkic.pytest``; also importable as
``nkic.nki``).

``@nki.jit`` kernels called with NumPy arrays or torch CPU tensors run on
nkic, compiled and scheduled; ``nki.simulate``, ``nki.simulate_kernel``,
``nki.baremetal``, ``nki.benchmark`` and ``nki.profile`` keep their NKI
call forms (``docs/python.md`` lists what each does here).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional


from .._kernel import Kernel
from . import collectives, compiler, isa, language, typing

NKIObject = language.NKIObject

__all__ = [
    "jit",
    "simulate",
    "simulate_kernel",
    "baremetal",
    "benchmark",
    "profile",
    "trace",
    "language",
    "isa",
    "typing",
    "collectives",
    "NKIObject",
]


def _kernel_of(fn: Any) -> Kernel:
    return fn if isinstance(fn, Kernel) else Kernel(fn, compat=True)


def jit(fn: Optional[Callable[..., Any]] = None, **options: Any) -> Any:
    """``@nki.jit`` / ``@nki.jit(mode=..., platform_target=...)``: the
    kernel, run on nkic when called. The options do not change what the
    kernel computes; ``platform_target`` is checked by nkic's specializer
    against the target it compiles for."""

    def wrap(f: Callable[..., Any]) -> Kernel:
        return _kernel_of(f)

    return wrap if fn is None else wrap(fn)


trace = jit
baremetal = jit


def simulate(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """``nki.simulate(kernel)(a, b)``, or ``nki.simulate(kernel, a, b)``."""
    k = _kernel_of(kernel)
    if args or kwargs:
        return k(*args, **kwargs)
    return k


def simulate_kernel(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """The legacy ``simulate_kernel(kernel, *args)``: runs it once."""
    return _kernel_of(kernel)(*args, **kwargs)


class _Latency:
    def __init__(self, us: float) -> None:
        self._us = us

    def get_latency_percentile(self, percentile: float) -> float:
        """The simulated latency in microseconds (the simulator is
        deterministic: every percentile is the same)."""
        return self._us


class _BenchmarkResult:
    def __init__(self, us: float) -> None:
        self.nc_latency = _Latency(us)


class _Benchmarked(Kernel):
    """A kernel whose calls record ``benchmark_result`` (simulated time)."""

    benchmark_result: Optional[_BenchmarkResult] = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = super().__call__(*args, **kwargs)
        report = self.last_report or {}
        self.benchmark_result = _BenchmarkResult(float(report.get("simulated_ns", 0.0)) / 1000.0)
        return out

    def _replace(self, **changes: Any) -> "_Benchmarked":
        k = super()._replace(**changes)
        k.__class__ = _Benchmarked
        return k  # type: ignore[return-value]


def benchmark(kernel: Any = None, **options: Any) -> Any:
    """``nki.benchmark(warmup=, iters=, ...)(kernel)``: calls report the
    simulated latency in ``.benchmark_result.nc_latency``; ``warmup`` and
    ``iters`` are accepted (one simulated run is exact)."""

    def wrap(f: Any) -> Kernel:
        k = _kernel_of(f)._replace()
        k.__class__ = _Benchmarked
        return k

    return wrap if kernel is None else wrap(kernel)


def profile(kernel: Any = None, *, working_directory: str = ".", **options: Any) -> Any:
    """``nki.profile(working_directory=...)(kernel)``: calls also write
    ``trace.json`` and ``timeline.svg`` into ``working_directory``."""

    def wrap(f: Any) -> Kernel:
        return _kernel_of(f)._replace(trace_dir=os.fspath(working_directory))

    return wrap if kernel is None else wrap(kernel)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    from .._tokens import spelled

    return spelled("nki", name)


