"""Kernels called from Python: binding a call to the kernel's parameters,
the compile cache, arrays in and out, in-place updates.

A call ``kernel(a, b, n=4)`` binds its arguments to the kernel function's
signature. NumPy arrays and torch CPU tensors (anything with ``shape`` and
``dtype`` that NumPy can view) are the kernel's HBM tensors; every other
argument is a compile-time value (``_values``). The pair (source texts,
argument signature, options) keys the compile cache, so a kernel called
again with the same shapes is compiled once. Outputs come back as NumPy
arrays (torch tensors when the inputs were torch tensors); a tensor
argument the kernel writes is updated in place, as the NKI simulator does.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import sys
import threading
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _dtypes, _native, _values
from ._errors import NkicWarning, OutOfBoundsError

#: The largest size of a launch grid's dim, as `nkic --grid` takes it.
_GRID_MAX = _native.GRID_MAX

__all__ = ["Kernel", "Compiled", "TensorSpec", "tensor", "Grid"]

Grid = Union[int, Tuple[int, ...]]


class TensorSpec:
    """A tensor argument known by shape and dtype only (for
    :func:`nkic.compile` and :func:`nkic.check`, which need no data)."""

    def __init__(self, shape: Sequence[int], dtype: Any) -> None:
        self.shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in self.shape):
            # NumPy's rule and words (`np.empty((-1, 3))`); a zero dim is
            # the specializer's E0502 when the tensor is used, as for an
            # empty array.
            raise ValueError("negative dimensions are not allowed")
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"nkic.tensor({self.shape}, {self.dtype})"


def tensor(shape: Sequence[int], dtype: Any = np.float32) -> TensorSpec:
    """A tensor argument of this shape and dtype, without data."""
    return TensorSpec(shape, dtype)


class _Arg:
    """One tensor argument of a call: its nkic dtype, shape, and the host
    object it came from."""

    __slots__ = ("name", "dtype", "shape", "array", "original", "torch")

    def __init__(self, name: str, dtype: str, shape: Tuple[int, ...], array: Optional[np.ndarray], original: Any, torch: bool) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.array = array
        self.original = original
        self.torch = torch


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def _host_array(name: str, value: Any) -> Tuple[np.ndarray, bool]:
    """A NumPy view of a tensor argument (no copy for C-contiguous NumPy
    arrays and CPU torch tensors), and whether it was a torch tensor."""
    if _is_torch(value):
        t = value.detach()
        if t.device.type != "cpu":
            raise TypeError(
                f"argument `{name}` is a torch tensor on {t.device}; nkic runs kernels on "
                "CPU tensors (call .cpu() first)"
            )
        dtype = _dtypes.torch_name(t.dtype)
        if dtype is None:
            raise TypeError(f"argument `{name}` has dtype {t.dtype}, which NKI tensors cannot have")
        if dtype in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            import torch

            raw = t.contiguous().view(torch.uint8 if t.element_size() == 1 else torch.int16)
            return raw.numpy().view(_dtypes.to_numpy(dtype)), True
        return t.contiguous().numpy(), True
    if isinstance(value, np.ndarray):
        return value, False
    # JAX arrays and other array-likes: NumPy's view of them.
    return np.asarray(value), False


def _looks_like_tensor(value: Any) -> bool:
    if isinstance(value, (np.ndarray, TensorSpec)) or _is_torch(value):
        return True
    if isinstance(value, type):
        return False  # np.float32 has `shape` and `dtype` descriptors too
    return (
        hasattr(value, "__array__")
        and hasattr(value, "shape")
        and hasattr(value, "dtype")
        and not isinstance(value, np.generic)
    )


def _tensor_arg(name: str, value: Any, precise_fp: bool) -> _Arg:
    if isinstance(value, TensorSpec):
        dtype = _dtypes.nkic_name(value.dtype) or _dtypes.torch_name(value.dtype)
        if dtype is None:
            raise TypeError(f"argument `{name}`: nkic has no dtype {value.dtype}")
        if not precise_fp and dtype in _dtypes.LOW_PRECISION:
            dtype = "float32"
        return _Arg(name, dtype, value.shape, None, value, False)
    array, is_torch = _host_array(name, value)
    dtype = _dtypes.nkic_name(array.dtype)
    if dtype is None:
        raise TypeError(
            f"argument `{name}` has dtype {array.dtype}, which NKI tensors cannot have "
            "(float32, float16, bfloat16, float8_*, int8/16/32, uint8/16/32, bool)"
        )
    if array.ndim == 0:
        raise TypeError(f"argument `{name}` is a 0-d array; NKI tensors have at least one dimension")
    if not precise_fp and dtype in _dtypes.LOW_PRECISION:
        array = array.astype(np.float32)
        dtype = "float32"
    return _Arg(name, dtype, tuple(int(d) for d in array.shape), array, value, is_torch)


def _env_target() -> Optional[str]:
    value = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip().lower()
    if not value:
        return None
    return value


def _precise_fp() -> bool:
    return os.environ.get("NKI_PRECISE_FP", "1").strip() not in ("0", "false", "False")


class _Source:
    """The kernel function's file and name, found with ``inspect``."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = fn.__name__
        path = inspect.getsourcefile(fn)
        if path is None:
            raise TypeError(f"cannot find the source file of kernel `{fn.__qualname__}`")
        self.path = os.path.abspath(path)
        self.module_name = getattr(fn, "__module__", "") or ""
        self.globals = getattr(fn, "__globals__", {})
        self.signature = inspect.signature(fn)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _digest(path: str) -> bytes:
    return hashlib.blake2b(_read(path), digest_size=16).digest()


def _host_files(paths: List[str]) -> List[Tuple[str, str, List[int], bytes]]:
    """The `.npy` files a call's compile-time arguments name, as the
    specializer's host files (docs/python.md): each path with its array's
    dtype name, shape and elements as little-endian float64. A file NumPy
    cannot read as a numeric array is left out (the kernel then gets
    nkic's error for a file the compile does not have)."""
    out = []
    for path in dict.fromkeys(paths):
        try:
            a = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            continue
        if a.dtype.kind not in "biuf":
            continue
        out.append((path, a.dtype.name, list(a.shape), a.astype("<f8").tobytes()))
    return out


def _search_paths(kernel_dir: str) -> List[str]:
    """Where the specializer finds the modules a kernel imports: the
    kernel's directory, then ``sys.path`` without the standard library and
    installed packages (their modules are host code nkic does not run;
    a kernel's own packages are found through their source roots, which
    editable installs and ``PYTHONPATH`` put on ``sys.path``)."""
    import site
    import sysconfig

    skip = {
        os.path.realpath(p)
        for p in (
            [sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")]
            + list(getattr(site, "getsitepackages", lambda: [])())
            + [getattr(site, "getusersitepackages", lambda: "")()]
        )
        if p
    }
    out = [kernel_dir]
    for p in sys.path:
        if not p or not os.path.isdir(p):
            continue
        real = os.path.realpath(p)
        if real in skip or real.endswith((".zip", "lib-dynload")) or p in out:
            continue
        out.append(p)
    return out


def _stamp(path: str) -> Tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_size)


class _CacheEntry:
    """A compiled program and the digests of the files it was compiled
    from. A file whose modification time and size are unchanged is not
    read again; one whose stamp changed is re-hashed, so touching a file
    without changing it keeps the entry."""

    __slots__ = ("program", "files")

    def __init__(self, program: Any, paths: List[str]) -> None:
        self.program = program
        self.files = [[path, _stamp(path), _digest(path)] for path in paths]

    def fresh(self) -> bool:
        for entry in self.files:
            path, stamp, digest = entry
            now = _stamp(path)
            if now == stamp:
                continue
            if _digest(path) != digest:
                return False
            entry[1] = now
        return True


_cache: Dict[Any, _CacheEntry] = {}
_cache_lock = threading.Lock()
_stats = {"compiles": 0, "hits": 0}


def cache_info() -> Dict[str, int]:
    """How often the compile cache compiled and how often it answered."""
    return {"compiles": _stats["compiles"], "hits": _stats["hits"], "entries": len(_cache)}


def clear_cache() -> None:
    """Forgets every compiled kernel."""
    with _cache_lock:
        _cache.clear()


def _grid_and_lnc(grid: Any) -> Tuple[List[int], Optional[int]]:
    """A launch grid as nkic's ``--grid`` dims and the LNC it implies
    (``kernel[nl.spmd_dim(n, nl.nc(2))]`` is ``n`` instances per core on
    two cores)."""
    if grid is None:
        return [], None
    items = grid if isinstance(grid, tuple) else (grid,)
    dims: List[int] = []
    lnc: Optional[int] = None
    for item in items:
        cores = getattr(item, "_nkic_cores", None)
        if cores is not None:
            lnc = cores
            dims.append(int(item.size) * cores)
            continue
        nc = getattr(item, "_nkic_nc", None)
        if nc is not None:
            lnc = nc
            dims.append(nc)
            continue
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            # The range `nkic --grid` takes (a grid past 1024 instances is
            # then E0225, as on the command line).
            if not 1 <= int(item) <= _GRID_MAX:
                raise ValueError(f"a launch grid's sizes are in 1..={_GRID_MAX}, not {int(item)}")
            dims.append(int(item))
            continue
        raise TypeError(f"a launch grid holds ints, not {item!r}")
    return dims, lnc


class Compiled:
    """A kernel compiled for one argument signature: ``.nkasm``, ``.ir``,
    ``.report`` (the ``--report json`` fields of a run on the call's
    inputs), ``.warnings``, and :meth:`run`."""

    def __init__(self, kernel: "Kernel", program: Any, call: "_Call") -> None:
        self._kernel = kernel
        self._program = program
        self._call = call
        self._report: Optional[Dict[str, Any]] = None

    @property
    def nkasm(self) -> str:
        """The Trainium pseudo-ISA program (``nkic compile --emit asm``)."""
        return self._program.nkasm

    @property
    def ir(self) -> str:
        """The specialized tile IR (``nkic compile --emit ir``)."""
        return self._program.ir

    @property
    def target(self) -> str:
        return self._program.target

    @property
    def warnings(self) -> List[Dict[str, Any]]:
        """The compile's warnings as JSON records."""
        import json

        return [json.loads(r) for r in self._program.warnings[1]]

    @property
    def report(self) -> Dict[str, Any]:
        """The run report of this call's inputs (random data for
        :func:`nkic.tensor` arguments): ``target``, ``simulated_ns``,
        ``lower_bound_ns``, ``engines``, ``instructions``,
        ``hbm_bytes_read``, ``hbm_bytes_written``, ``flops``, ``outputs``."""
        if self._report is None:
            import json

            raw = self._kernel._execute(self._program, self._call, trace=False)
            self._report = json.loads(raw["report"])
        return self._report

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the kernel on new arguments (compiled again only if their
        signature differs)."""
        return self._kernel(*args, **kwargs)


class _Call:
    """One call bound to the kernel's parameters."""

    __slots__ = ("tensors", "consts", "files", "key")

    def __init__(
        self, tensors: List[_Arg], consts: List[Tuple[str, str]], files: List[str], key: Any
    ) -> None:
        self.tensors = tensors
        self.consts = consts
        # The `.npy` files the compile-time arguments name.
        self.files = files
        self.key = key


class Kernel:
    """An NKI kernel callable from Python (what :func:`nkic.jit`,
    :func:`nkic.simulate` and, under ``NKI_SIMULATOR=nkic``, ``nki.jit``
    return). Call it with the kernel's arguments; index it with a launch
    grid first for SPMD kernels (``kernel[2](a, b)``, ``kernel[4, 2]``)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        target: Optional[str] = None,
        lnc: Optional[int] = None,
        grid: Any = None,
        seed: int = 0,
        poison: Optional[str] = None,
        schedule: str = "optimized",
        trace_dir: Optional[str] = None,
        compat: bool = False,
        no_spill: bool = False,
    ) -> None:
        if isinstance(fn, Kernel):
            fn = fn.fn
        fn = getattr(fn, "func", fn)  # an AWS `nki.jit` wrapper keeps its function here
        if not callable(fn):
            raise TypeError(f"a kernel is a Python function, not {fn!r}")
        self.fn = fn
        self.target = target
        self.lnc = lnc
        self.grid = grid
        self.seed = seed
        self.poison = poison
        self.schedule = schedule
        #: Keep E0901/E0902 instead of spilling on-chip tensors that do not
        #: fit (`nkic --no-spill`).
        self.no_spill = no_spill
        self.trace_dir = trace_dir
        #: Called through the drop-in `nki` namespaces: faults are raised as
        #: the NKI simulator raises them (a plain IndexError out of bounds).
        self.compat = compat
        self._source: Optional[_Source] = None
        # The function's name and docstring, but no `__wrapped__`: pytest
        # follows it and would collect a kernel named `test_*` as a test
        # whose parameters are fixtures; NKI's own jit objects are not
        # collected either.
        functools.update_wrapper(self, fn)
        del self.__wrapped__
        self._last_raw: Optional[str] = None

    def _replace(self, **changes: Any) -> "Kernel":
        k = Kernel(
            self.fn,
            target=self.target,
            lnc=self.lnc,
            grid=self.grid,
            seed=self.seed,
            poison=self.poison,
            schedule=self.schedule,
            trace_dir=self.trace_dir,
            compat=self.compat,
            no_spill=self.no_spill,
        )
        for name, value in changes.items():
            setattr(k, name, value)
        return k

    def __getitem__(self, grid: Any) -> "Kernel":
        return self._replace(grid=grid)

    def __repr__(self) -> str:
        return f"<nkic kernel {self.fn.__qualname__}>"

    @property
    def source(self) -> _Source:
        if self._source is None:
            self._source = _Source(self.fn)
        return self._source

    # -- binding -------------------------------------------------------

    def _bind(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> _Call:
        src = self.source
        try:
            bound = src.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"kernel `{src.name}`: {err}") from None
        precise = _precise_fp()
        tensors: List[_Arg] = []
        consts: List[Tuple[str, str]] = []
        files: List[str] = []
        for name, value in bound.arguments.items():
            param = src.signature.parameters[name]
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(
                    f"kernel `{src.name}`: nkic cannot pass *args/**kwargs parameters (`{name}`)"
                )
            if _looks_like_tensor(value):
                tensors.append(_tensor_arg(name, value, precise))
            else:
                try:
                    expr = _values.to_expr(value, src.globals, src.module_name, files)
                except TypeError as err:
                    raise TypeError(f"kernel `{src.name}`, argument `{name}`: {err}") from None
                consts.append((name, expr))
        grid, grid_lnc = _grid_and_lnc(self.grid)
        lnc = self.lnc if self.lnc is not None else grid_lnc
        target = self.target or _env_target()
        key = (
            src.path,
            src.name,
            tuple((t.name, t.dtype, t.shape) for t in tensors),
            tuple(consts),
            tuple(grid),
            target,
            lnc,
            self.schedule,
            precise,
            self.no_spill,
        )
        return _Call(tensors, consts, files, key)

    # -- compiling -----------------------------------------------------

    def _program(self, call: _Call) -> Any:
        with _cache_lock:
            entry = _cache.get(call.key)
        if entry is not None and entry.fresh():
            _stats["hits"] += 1
            return entry.program
        src = self.source
        path, name, _, _, grid, target, lnc, schedule, precise, no_spill = call.key
        search = _search_paths(os.path.dirname(src.path))
        program = _native.compile(
            path,
            kernel=name,
            args=[(t.name, t.dtype, list(t.shape)) for t in call.tensors],
            consts=list(call.consts),
            grid=list(grid),
            target=target,
            lnc=lnc,
            search_paths=search,
            schedule=schedule,
            precise_fp=precise,
            no_spill=no_spill,
            host_files=_host_files(call.files),
        )
        _stats["compiles"] += 1
        for text in program.prints:
            print(text)
        rendered, records = program.warnings
        if records:
            warnings.warn(NkicWarning(rendered.rstrip("\n")), stacklevel=4)
        # The sources and the `.npy` files the arguments name: an entry
        # whose files changed is compiled anew (`_CacheEntry.fresh`).
        files = [f for f in program.files if os.path.isfile(f)] + call.files
        with _cache_lock:
            _cache[call.key] = _CacheEntry(program, files)
        return program

    def compile(self, *args: Any, **kwargs: Any) -> Compiled:
        """Compiles the kernel for these arguments (arrays or
        :func:`nkic.tensor` specs) without running it."""
        call = self._bind(args, kwargs)
        return Compiled(self, self._program(call), call)

    # -- running -------------------------------------------------------

    def _execute(self, program: Any, call: _Call, *, trace: bool) -> Dict[str, Any]:
        inputs: Dict[str, np.ndarray] = {}
        for t in call.tensors:
            if t.array is None:
                continue
            a = np.ascontiguousarray(t.array)
            inputs[t.name] = a.reshape(-1).view(np.uint8)
        title = f"{os.path.basename(self.source.path)}:{self.source.name}"
        kw: Dict[str, Any] = dict(seed=self.seed, trace=trace, title=title)
        if self.poison is not None:
            kw["poison"] = self.poison
        return program.run(inputs, **kw)

    def _outputs(self, program: Any, call: _Call, raw: Dict[str, Any]) -> Any:
        shapes = {name: (dtype, tuple(shape)) for name, _, dtype, shape in program.arguments}
        as_torch = any(t.torch for t in call.tensors)

        def view(name: str) -> np.ndarray:
            dtype, shape = shapes[name]
            return raw["outputs"][name].view(_dtypes.to_numpy(dtype)).reshape(shape)

        # In-place updates of the arguments the kernel wrote.
        by_pos = list(self.source.signature.parameters)
        tensors = {t.name: t for t in call.tensors}
        for pos, prog_name in program.written:
            t = tensors.get(by_pos[pos]) if pos < len(by_pos) else None
            if t is None or t.array is None or prog_name not in raw["outputs"]:
                continue
            _write_back(t, view(prog_name))
        results = [_to_host(view(n), as_torch) for n in program.returned]
        if not results:
            return None
        return results[0] if len(results) == 1 else tuple(results)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self._bind(args, kwargs)
        program = self._program(call)
        trace = self.trace_dir is not None
        try:
            raw = self._execute(program, call, trace=trace)
        except OutOfBoundsError as err:
            if not self.compat:
                raise
            raise _plain_index_error(err) from None
        rendered, records = raw["warnings"]
        if records:
            warnings.warn(NkicWarning(rendered.rstrip("\n")), stacklevel=2)
        if trace:
            _write_profile(raw, self.trace_dir)
        self._last_raw = raw["profile" if trace else "report"]
        #: The simulator's own wall time in the last call (benches/bench_api.py).
        self._last_simulate_wall_ns = int(raw["simulate_wall_ns"])
        return self._outputs(program, call, raw)

    @property
    def last_report(self) -> Optional[Dict[str, Any]]:
        """The last call's report (``--report json`` fields), or its
        profile summary when the kernel is traced (``nki.profile``)."""
        raw = getattr(self, "_last_raw", None)
        if raw is None:
            return None
        import json

        return json.loads(raw)


def _plain_index_error(err: OutOfBoundsError) -> IndexError:
    """The NKI simulator's exception for an out-of-bounds access: a plain
    ``IndexError`` with NumPy's message; nkic's report rides along as the
    exception's note and ``diagnostics``."""
    facts = next((d.get("facts") for d in err.diagnostics if d.get("facts")), None) or {}
    message = str(err)
    if "flat_offset" in facts and "shape" in facts:
        # The NKI simulator indexes the flattened tensor.
        size = int(np.prod(facts["shape"], dtype=np.int64))
        message = f"index {facts['flat_offset']} is out of bounds for axis 0 with size {size}"
    plain = IndexError(message)
    plain.diagnostics = err.diagnostics  # type: ignore[attr-defined]
    if hasattr(plain, "add_note"):
        plain.add_note(str(err))
    return plain


def _to_host(array: np.ndarray, as_torch: bool) -> Any:
    if not as_torch:
        return array
    import torch

    name = _dtypes.nkic_name(array.dtype)
    if name == "bfloat16":
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    if name in ("float8_e4m3fn", "float8_e5m2"):
        return torch.from_numpy(array.view(np.uint8).copy()).view(getattr(torch, name))
    return torch.from_numpy(array.copy())


def _write_back(arg: _Arg, value: np.ndarray) -> None:
    """Stores a written argument's final value into the caller's object."""
    original = arg.original
    if arg.torch:
        import torch

        src = _to_host(value, True)
        with torch.no_grad():
            original.copy_(src.reshape(original.shape).to(original.dtype))
        return
    if isinstance(original, np.ndarray) and original.flags.writeable:
        np.copyto(original, value.reshape(original.shape).astype(original.dtype, copy=False))


def _write_profile(raw: Dict[str, Any], directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    for name, key in (("trace.json", "trace"), ("timeline.svg", "timeline")):
        path = os.path.join(directory, name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(raw[key])
        os.replace(tmp, path)
