#!/usr/bin/env python3
"""Inputs and NumPy references of the per-instruction golden tests.

Every fixture `tests/nkasm/<name>.nkasm` is a hand-written program; the
function `<name>` below writes its inputs `<name>.in.<arg>.npy` and computes
its expected outputs `<name>.ref.out<N>.npy` (in the program's output order)
from the semantics in docs/isa.md and docs/numerics.md, independently of the
Rust interpreter.  Each fixture draws from its own generator seeded with the
CRC-32 of its name, so regenerating gives identical bytes.

    python3 tests/nkasm/gen.py            # (re)write every input and reference
    python3 tests/nkasm/gen.py --check    # fail if any file would change
    python3 tests/nkasm/gen.py NAME...    # only these fixtures

Conventions: dtypes NumPy lacks (bfloat16, fp8, packed x4) travel as raw
bits (`<u2`, `|u1`, `<u4`), which `nkic exec` reads and writes the same way.
Engine arithmetic is float32 with every operation rounded (NumPy float32
arithmetic, never fused); sums are sequential loops, never `np.sum`.
Activation functions are evaluated in float64 and rounded to float32.
"""

import io
import math
import os
import sys
import zlib

import ml_dtypes as mld
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
F32 = np.float32
F64 = np.float64

# ----------------------------------------------------------------- dtypes

FLOAT_NP = {
    "f32": np.float32,
    "f16": np.float16,
    "bf16": mld.bfloat16,
    "f8e4m3": mld.float8_e4m3,
    "f8e4m3fn": mld.float8_e4m3fn,
    "f8e5m2": mld.float8_e5m2,
    "e8m0": mld.float8_e8m0fnu,
}
RAW = {"bf16": np.uint16, "f8e4m3": np.uint8, "f8e4m3fn": np.uint8, "f8e5m2": np.uint8, "e8m0": np.uint8}
INT_NP = {
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
}


def f32(x):
    return np.asarray(x, dtype=F32)


def bits_f32(u):
    """float32 values with the given bit patterns."""
    return np.asarray(u, dtype=np.uint32).view(F32)


def tf32_bits(x):
    """numerics.md: round to 10 mantissa bits (RNE) in a 4-byte container; NaN keeps its top payload bits, quiet."""
    b = f32(x).view(np.uint32).astype(np.uint64)
    nan = np.isnan(f32(x))
    r = ((b + 0xFFF + ((b >> 13) & 1)) & ~np.uint64(0x1FFF)) & 0xFFFFFFFF
    r = np.where(nan, (b | 0x00400000) & ~np.uint64(0x1FFF), r)
    return r.astype(np.uint32).view(F32)


def cast(x, dt):
    """An engine write: float32 values `x` stored as `dt` (the array saved in .npy)."""
    x = f32(x)
    if dt == "f32":
        return x.copy()
    if dt == "tf32":
        return tf32_bits(x)
    with np.errstate(all="ignore"):
        if dt in ("f16", "bf16"):
            # numerics.md: a NaN keeps its top payload bits with the quiet bit set (the half crate); ml_dtypes
            # would write the canonical NaN for bf16.
            out = x.astype(np.float16).view(np.uint16) if dt == "f16" else x.astype(mld.bfloat16).view(np.uint16)
            out = np.where(np.isnan(x), nan_encode(x.view(np.uint32), dt).view(np.uint16), out).astype(np.uint16)
            return out.view(np.float16) if dt == "f16" else out
        if dt in RAW:
            return x.astype(FLOAT_NP[dt]).view(RAW[dt])
    if dt in INT_NP:
        info = np.iinfo(INT_NP[dt])
        with np.errstate(invalid="ignore"):
            r = np.rint(x.astype(F64))
            r = np.where(np.isnan(r), 0.0, r)
            r = np.clip(r, info.min, info.max)
        return r.astype(INT_NP[dt])
    if dt == "bool":
        return x != 0
    raise ValueError(dt)


def value(a, dt):
    """The float32 value of stored elements (numerics::to_f32)."""
    a = np.asarray(a)
    if dt == "f32":
        return a.astype(F32)
    if dt == "bf16":
        return (a.astype(np.uint32) << 16).view(F32)
    if dt in RAW:
        v = a.view(FLOAT_NP[dt]).astype(F32)
        # numerics.md: an fp8 NaN code decodes to a quiet NaN with the code's sign.
        sign = (a.astype(np.uint32) & 0x80) << 24 if dt != "e8m0" else 0
        return np.where(np.isnan(v), bits_f32(np.uint32(0x7FC00000) | sign), v).astype(F32)
    if dt == "bool":
        return (a != 0).astype(F32)
    return a.astype(F32)


def q(x, dt):
    """`x` rounded to `dt` and read back (a write followed by a read)."""
    return value(cast(x, dt), dt)


# ----------------------------------------------------------------- ALU (isa.md 1.6)


def alu(op, a, b=None):
    a = f32(a)
    b = None if b is None else f32(b)
    with np.errstate(all="ignore"):
        if op == "add":
            return a + b
        if op == "subtract":
            return a - b
        if op == "multiply":
            return a * b
        if op == "maximum":
            return np.maximum(a, b)
        if op == "minimum":
            return np.minimum(a, b)
        cmp = {
            "equal": np.equal,
            "not_equal": np.not_equal,
            "greater_equal": np.greater_equal,
            "greater": np.greater,
            "less_equal": np.less_equal,
            "less": np.less,
        }
        if op in cmp:
            return cmp[op](a, b).astype(F32)
        if op == "logical_and":
            return ((a != 0) & (b != 0)).astype(F32)
        if op == "logical_or":
            return ((a != 0) | (b != 0)).astype(F32)
        if op == "logical_xor":
            return ((a != 0) ^ (b != 0)).astype(F32)
        if op == "power":
            return f32(np.power(a.astype(F64), b.astype(F64)))
        if op == "abs_max":
            return np.where(np.abs(a) > np.abs(b), a, b).astype(F32)
        if op == "abs_min":
            return np.where(np.abs(a) < np.abs(b), a, b).astype(F32)
        if op == "abs":
            return np.abs(a)
        if op == "square":
            return a * a
        if op == "relu":
            return np.where(np.isnan(a), a, np.where(a > 0, a, F32(0))).astype(F32)
        if op == "rsqrt":
            # One correctly rounded operation (the interpreter's reading of "1/sqrt(lhs)"; see GOLDEN_FINDINGS).
            return f32(1.0 / np.sqrt(a.astype(F64)))
        if op == "reciprocal":
            return F32(1) / a
        if op == "bypass":
            return a
    raise ValueError(op)


IDENTITY = {
    "add": 0.0,
    "subtract": 0.0,
    "abs_max": 0.0,
    "multiply": 1.0,
    "maximum": -np.inf,
    "minimum": np.inf,
    "abs_min": np.inf,
}


def row_reduce(op, rows):
    """isa.md 1.5: `op` folded sequentially over each row from its identity."""
    rows = f32(rows)
    acc = np.full(rows.shape[0], IDENTITY[op], F32)
    for i in range(rows.shape[1]):
        acc = alu(op, acc, rows[:, i])
    return acc


def ext32(a):
    """Sign- or zero-extends integer elements to 32 bits (as uint32 bit patterns)."""
    a = np.asarray(a)
    return a.astype(np.int64).astype(np.uint32) if a.dtype.kind == "i" else a.astype(np.uint32)


def bitwise(op, a, b):
    """Bitwise ALU operators on 32-bit patterns (uint32 arrays)."""
    a = np.asarray(a, np.uint32)
    b = np.asarray(b, np.uint32)
    if op == "bitwise_and":
        return a & b
    if op == "bitwise_or":
        return a | b
    if op == "bitwise_xor":
        return a ^ b
    if op == "left_shift":
        return (a.astype(np.uint64) << (b & 31).astype(np.uint64)).astype(np.uint64) & 0xFFFFFFFF
    if op == "right_shift":
        return a >> (b & 31)
    if op == "invert":
        return ~a
    raise ValueError(op)


def low_bits(u, dt):
    """The low bits of 32-bit patterns stored as integer dtype `dt`."""
    n = np.dtype(INT_NP[dt]).itemsize * 8
    return (np.asarray(u, np.uint64) & ((1 << n) - 1)).astype(np.dtype(INT_NP[dt]).str.replace("i", "u")).view(INT_NP[dt])


# ----------------------------------------------------------------- activation functions (isa.md 1.7)


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


_erf = np.vectorize(math.erf, otypes=[F64])


def act(func, x, alpha=0.0):
    """The activation in float64 of float32 inputs, rounded once to float32."""
    x = f32(x).astype(F64)
    with np.errstate(all="ignore"):
        if func == "copy":
            r = x
        elif func == "square":
            r = x * x
        elif func == "sigmoid":
            r = _sig(x)
        elif func == "relu":
            r = np.where(np.isnan(x), x, np.maximum(x, 0.0))
        elif func == "prelu":
            r = np.where(x > 0, x, alpha * x)
        elif func == "gelu":
            r = 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
        elif func == "gelu_dx":
            r = 0.5 * (1.0 + _erf(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        elif func == "gelu_apprx_tanh":
            r = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
        elif func == "gelu_apprx_sigmoid":
            r = x * _sig(1.702 * x)
        elif func == "gelu_apprx_sigmoid_dx":
            s = _sig(1.702 * x)
            r = s + 1.702 * x * s * (1.0 - s)
        elif func == "silu":
            r = x * _sig(x)
        elif func == "silu_dx":
            s = _sig(x)
            r = s * (1.0 + x * (1.0 - s))
        elif func == "tanh":
            r = np.tanh(x)
        elif func == "softplus":
            # ln(1 + e^x) written so that large x gives the mathematical value x instead of overflowing.
            r = np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))
        elif func == "mish":
            r = x * np.tanh(np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x))))
        elif func == "erf":
            r = _erf(x)
        elif func == "erf_dx":
            r = 2.0 / math.sqrt(math.pi) * np.exp(-x * x)
        elif func == "exp":
            r = np.exp(x)
        elif func == "log":
            r = np.log(x)
        elif func == "sin":
            r = np.sin(x)
        elif func == "arctan":
            r = np.arctan(x)
        elif func == "sqrt":
            r = np.sqrt(x)
        elif func == "rsqrt":
            r = 1.0 / np.sqrt(x)
        elif func == "reciprocal":
            r = 1.0 / x
        elif func == "sign":
            r = np.where(np.isnan(x), x, np.sign(x))
        elif func == "abs":
            r = np.abs(x)
        else:
            raise ValueError(func)
        return r.astype(F32)


ACT_FUNCS = [
    "copy", "square", "sigmoid", "relu", "prelu", "gelu", "gelu_dx", "gelu_apprx_tanh",
    "gelu_apprx_sigmoid", "gelu_apprx_sigmoid_dx", "silu", "silu_dx", "tanh", "softplus",
    "mish", "erf", "erf_dx", "exp", "log", "sin", "arctan", "sqrt", "rsqrt", "reciprocal",
    "sign", "abs",
]

# ----------------------------------------------------------------- random number generators (isa.md 6.5)

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


class Lane:
    """One XORWOW lane seeded through SplitMix64."""

    def __init__(self, seed, lane):
        z = ((seed & M32) << 32) + lane
        words = []
        for _ in range(6):
            z = (z + 0x9E3779B97F4A7C15) & M64
            t = z
            t = ((t ^ (t >> 30)) * 0xBF58476D1CE4E5B9) & M64
            t = ((t ^ (t >> 27)) * 0x94D049BB133111EB) & M64
            words.append((t ^ (t >> 31)) & M32)
        self.x = words[:5]
        self.d = words[5]
        if not any(self.x):
            self.x[0] = 1

    def draw(self):
        x0, x1, x2, x3, x4 = self.x
        t, s = x4, x0
        x4, x3, x2, x1 = x3, x2, x1, s
        t ^= t >> 2
        t ^= (t << 1) & M32
        t ^= s ^ ((s << 4) & M32)
        x0 = t
        self.x = [x0, x1, x2, x3, x4]
        self.d = (self.d + 362437) & M32
        return (t + self.d) & M32


class Engine:
    """The 128 lanes of one engine's generators."""

    def __init__(self, seed=0):
        self.lanes = [Lane(seed, l) for l in range(128)]

    def draw(self, start, p, f):
        """`f` draws for each of partitions start..start+p, as uint32 [p, f]."""
        return np.array([[self.lanes[start + i].draw() for _ in range(f)] for i in range(p)], np.uint32)


def unit(r):
    """rand2's `u = (r >> 8) * 2^-24`."""
    return ((np.asarray(r, np.uint32) >> 8).astype(F64) * 2.0**-24).astype(F32)


# ----------------------------------------------------------------- fixture registry

FIXTURES = {}


def fixture(fn):
    FIXTURES[fn.__name__] = fn
    return fn


def special_f32():
    """A row of float32 special values."""
    return f32([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -1e-40, 3.4028235e38, 0.5, 2.5])


def randn(rng, *shape, scale=1.0):
    return f32(rng.standard_normal(shape) * scale)


def nkasm_data(name, tensor, descr, shape):
    """The bytes of the `.data <tensor> <hex>` lines of fixture `name`, concatenated, as an array."""
    with open(os.path.join(HERE, name + ".nkasm")) as f:
        words = [line.split() for line in f]
    hex_text = "".join(w[2] for w in words if len(w) == 3 and w[:2] == [".data", tensor])
    return np.frombuffer(bytes.fromhex(hex_text), dtype=descr).reshape(shape).copy()


# ================================================================= fixtures start here

# ----------------------------------------------------------------- data movement


@fixture
def dma_copy_f32_p128(rng):
    a = randn(rng, 128, 16)
    a[0, :12] = special_f32()
    a[1, :4] = bits_f32([0x7FC00001, 0xFFC12345, 0x00000001, 0x80000000])
    return {"a": a}, [a]


@fixture
def dma_copy_cast_f32_bf16(rng):
    a = randn(rng, 4, 64, scale=100.0)
    a[0, :12] = special_f32()
    # Ties to even, just above and below a tie, the overflow threshold.
    a[1, :8] = bits_f32([0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x7F7F8000, 0x7F7F7FFF, 0x00008000, 0x80018000])
    a[2, :4] = f32([1e-39, -3e-41, 65504.0, 0.1])
    return {"a": a}, [cast(a, "bf16")]


@fixture
def dma_copy_cast_bf16_f32(rng):
    # Every kind of bf16 bit pattern, NaNs included: decoding places the bits.
    a = rng.integers(0, 1 << 16, size=(4, 64), dtype=np.uint32).astype(np.uint16)
    a[0, :6] = [0x7FC0, 0xFFC1, 0x7F81, 0x7F80, 0x0001, 0x8000]
    return {"a": a}, [(a.astype(np.uint32) << 16).view(F32)]


@fixture
def dma_copy_cast_fp8(rng):
    a = randn(rng, 2, 64, scale=8.0)
    a[0, :12] = special_f32()
    a[0, 12:40] = f32([240, 248, 247.9, 256, 448, 464, 465, 480, 57344, 61440, 61439, 2.0**-9, 2.0**-10,
                       3 * 2.0**-11, 2.0**-16, 2.0**-17, 3 * 2.0**-18, 1.0625, 1.1875, 17.0, 19.0, -0.3, 1e-3,
                       0.01, 300.0, -1000.0, 5e4, 7e4])
    codes = np.arange(256, dtype=np.uint8).reshape(2, 128)
    outs = [cast(a, "f8e4m3"), cast(a, "f8e5m2"), cast(a, "f8e4m3fn")]
    outs += [value(codes, dt) for dt in ("f8e4m3", "f8e5m2", "f8e4m3fn")]
    return {"a": a, "b": codes, "c": codes, "d": codes}, outs


@fixture
def dma_copy_cast_int(rng):
    a = randn(rng, 2, 32, scale=200.0)
    a[0, :24] = f32([2.5, -2.5, 3.5, 0.5, -0.5, 1.5, 127.5, 128.0, -129.0, 255.5, 300.0, -1.0,
                     np.nan, np.inf, -np.inf, 65535.5, 65536.0, -32768.5, 3e9, -3e9, 4294967040.0,
                     4.5e9, 0.49999997, -0.0])
    outs = [cast(a, dt) for dt in ("i8", "i16", "i32", "u8", "u16", "u32")]
    b = np.array([[0, 1, -1, 16777217, -16777219, 2147483647, -2147483648, 123456789]], np.int32)
    outs.append(f32(b.astype(F64)))
    return {"a": a, "b": b}, outs


@fixture
def dma_copy_strided(rng):
    a = randn(rng, 8, 16)
    b = randn(rng, 8, 16)
    inter = np.empty((8, 32), F32)
    inter[:, 0::2] = a
    inter[:, 1::2] = b
    outs = [
        a.T.copy(),  # partition stride 1, free stride 16: a transposed read
        a[:, ::-1].copy(),  # negative stride
        np.repeat(a[0:1, :], 8, axis=0),  # partition stride 0: row 0 on every partition
        np.repeat(a[:, None, :], 4, axis=1).reshape(8, 64),  # free stride 0: each row 4 times
        a.reshape(1, 128),  # one partition
        a.reshape(4, 32),  # equal counts, different shapes
        inter,  # strided SBUF writes at partitions 100..107
    ]
    return {"a": a, "b": b}, outs


@fixture
def dma_copy_accumulate(rng):
    a = randn(rng, 8, 16)
    b = randn(rng, 8, 16)
    sum32 = a + b
    sum_bf = cast(value(cast(a, "bf16"), "bf16") + b, "bf16")
    return {"a": a, "b": b}, [sum32, sum_bf, sum32]


@fixture
def dma_transpose_bf16_2d(rng):
    b = cast(randn(rng, 16, 128), "bf16")
    return {"b": b}, [b.T.copy()]


@fixture
def dma_transpose_f32_3d_4d(rng):
    x = randn(rng, 4, 3, 8)
    y = randn(rng, 2, 3, 4, 5)
    return {"x": x, "y": y}, [x.transpose(2, 1, 0).copy(), y.transpose(3, 1, 2, 0).copy()]


@fixture
def dma_gather_rows(rng):
    a = randn(rng, 16, 8)
    fill = randn(rng, 6, 8)
    idx = np.array([[3], [15], [0], [3], [7], [20]], np.int32)
    out0 = fill.copy()
    for w in range(6):
        if idx[w, 0] < 16:
            out0[w] = a[idx[w, 0]]
    idx2 = np.array([[9], [1], [1], [14]], np.uint32)
    out1 = cast(a[idx2[:, 0]], "bf16")
    return {"a": a, "fill": fill, "idx": idx, "idx2": idx2}, [out0, out1]


@fixture
def dma_scatter_rows(rng):
    init = randn(rng, 10, 8)
    src = randn(rng, 6, 8)
    idx = np.array([[2], [9], [2], [-1], [5], [2]], np.int32)
    out0 = init.copy()
    for w in range(6):
        i = idx[w, 0]
        if 0 <= i < 10:
            out0[i] = out0[i] + src[w]
    idx2 = np.array([[7], [0], [3], [4], [8], [1]], np.uint32)
    out1 = init.copy()
    out1[idx2[:, 0]] = src
    return {"init": init, "src": src, "idx": idx, "idx2": idx2}, [out0, out1]


# ----------------------------------------------------------------- tensor_copy, memset, iota

TO_DTYPES = ["bf16", "f16", "tf32", "f8e4m3", "f8e5m2", "f8e4m3fn", "i8", "i16", "i32", "u8", "u16", "u32", "bool"]


def conversion_input(rng):
    a = randn(rng, 8, 16, scale=50.0)
    a[0, :12] = special_f32()
    a[1, :16] = f32([2.5, -2.5, 3.5, 0.5, -1.5, 127.5, 300.0, -300.0, 70000.0, -1.0, 1e9, 5e9,
                     1.00048828125, 1.0009765625, 0.1, 448.0])
    return a


@fixture
def tensor_copy_to_dtypes(rng):
    a = conversion_input(rng)
    return {"a": a}, [cast(a, dt) for dt in TO_DTYPES]


FROM_DTYPES = ["bf16", "f16", "f8e4m3", "f8e5m2", "f8e4m3fn", "i8", "i16", "i32", "u8", "u16", "u32", "bool"]


@fixture
def tensor_copy_from_dtypes(rng):
    ins = {}
    outs = []
    for k, dt in enumerate(FROM_DTYPES):
        if dt in RAW:
            x = rng.integers(0, 1 << (8 * np.dtype(RAW[dt]).itemsize), size=(4, 32)).astype(RAW[dt])
        elif dt == "f16":
            x = rng.integers(0, 1 << 16, size=(4, 32)).astype(np.uint16).view(np.float16)
            x = np.where(np.isnan(x), np.float16(1.5), x)  # NaN payload rules are covered by the codec tests
        elif dt == "bool":
            x = rng.integers(0, 2, size=(4, 32)).astype(bool)
        else:
            info = np.iinfo(INT_NP[dt])
            x = rng.integers(info.min, int(info.max) + 1, size=(4, 32), dtype=np.int64).astype(INT_NP[dt])
            if dt == "i32":
                x[0, :4] = [16777217, -16777219, 2147483647, -2147483648]
            if dt == "u32":
                x[0, :2] = [4294967295, 16777219]
        ins[f"x{k}"] = x
        # Widening is exact except int32/uint32 beyond 2^24, which round to nearest even (through f64, exact).
        outs.append(f32(x.astype(F64)) if dt in ("i32", "u32") else value(x, dt))
    return ins, outs


@fixture
def tensor_copy_engines_strided(rng):
    a = randn(rng, 128, 16, scale=3.0)
    b = cast(randn(rng, 1, 32), "bf16")
    b[0, :3] = [0x7FC1, 0xFF81, 0x8000]
    out0 = cast(a, "bf16")  # vector, through PSUM
    out1 = cast(a[:, 0::2], "bf16")  # gpsimd, stride-2 source
    out2 = np.repeat(a[:, 3:4], 8, axis=1)  # scalar, stride-0 source
    return {"a": a, "b": b}, [out0, out1, out2, b.copy()]


@fixture
def memset_dtypes(rng):
    outs = [
        np.full((128, 8), 1.5, F32),
        cast(np.full((1, 8), 0.1, F32), "bf16"),
        np.full((4, 8), -7, np.int32),
        np.full((4, 8), 300 & 0xFF, np.uint8),
        np.full((4, 8), True),
        np.full((4, 8), -56, np.int8),  # 200 stored as its low 8 bits
        cast(np.full((4, 8), 0.3, F32), "f8e4m3"),
        np.zeros((4, 8), np.uint32),  # packed x4: all-zero bits
        np.full((4, 8), -1, np.int16),  # 65535 -> low 16 bits
        cast(np.full((4, 8), -np.inf, F32), "f16"),
    ]
    return {}, outs


def iota_values(p, pattern, offset, cm):
    """isa.md iota: offset + p*channel_multiplier + sum i_k*step_k in wrapping int32."""
    idx = np.zeros([1], np.int64)
    for step, num in pattern:
        idx = (idx[:, None] + np.arange(num, dtype=np.int64)[None, :] * step).reshape(-1)
    v = offset + np.arange(p, dtype=np.int64)[:, None] * cm + idx[None, :]
    return ((v + 2**31) % 2**32 - 2**31).astype(np.int32)


@fixture
def iota_patterns(rng):
    o0 = iota_values(128, [(1, 8)], 3, 8)
    o1 = f32(iota_values(64, [(-1, 4), (2, 3)], -5, -3).astype(F64))
    o2 = iota_values(1, [(1, 4)], 2147483646, 0)  # wraps
    o3 = cast(f32(iota_values(32, [(7, 4)], 250, 17).astype(F64)), "bf16")
    o4 = cast(f32(iota_values(4, [(1, 16)], 0, 16).astype(F64)), "u8")
    return {}, [o0, o1, o2, o3, o4]


# ----------------------------------------------------------------- tensor_tensor, tensor_scalar, scalar_tensor_tensor

TT_OPS = ["add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal", "greater_equal",
          "greater", "less_equal", "less", "logical_and", "logical_or", "logical_xor", "abs_max", "abs_min"]


def two_operands(rng, p, f):
    a = randn(rng, p, f, scale=4.0)
    b = randn(rng, p, f, scale=4.0)
    # Equal values, equal magnitudes of opposite signs, zeros, NaN and infinities.
    b[:, 0] = a[:, 0]
    b[:, 1] = -a[:, 1]
    a[0, 2:8] = f32([0.0, np.nan, 1.0, np.inf, -np.inf, 0.0])
    b[0, 2:8] = f32([5.0, 1.0, np.nan, np.inf, 2.0, 0.0])
    a[:, 8] = np.round(a[:, 8])
    b[:, 8] = np.round(b[:, 8])
    return a, b


@fixture
def tensor_tensor_f32_ops(rng):
    a, b = two_operands(rng, 128, 12)
    return {"a": a, "b": b}, [alu(op, a, b) for op in TT_OPS]


@fixture
def tensor_tensor_power(rng):
    a = f32(np.abs(randn(rng, 4, 16, scale=3.0)) + 0.01)
    b = randn(rng, 4, 16, scale=2.0)
    b[0, :4] = f32([0.0, 1.0, 2.0, 0.5])
    # powf specials: a negative base with integral and non-integral exponents, 0^-1, NaN^0, 1^NaN.
    a[1, :5] = f32([-2.0, -2.0, 0.0, np.nan, 1.0])
    b[1, :5] = f32([3.0, 0.5, -1.0, 0.0, np.nan])
    return {"a": a, "b": b}, [alu("power", a, b)]


@fixture
def tensor_tensor_bitwise(rng):
    a = rng.integers(-(2**31), 2**31, size=(8, 16), dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, size=(8, 16), dtype=np.int64).astype(np.int32)
    s = rng.integers(0, 70, size=(8, 16)).astype(np.int32)  # shift counts beyond 31 use rhs mod 32
    s[0, :3] = [-1, 32, 33]
    outs = [bitwise(op, ext32(a), ext32(b)).astype(np.uint32).view(np.int32) for op in ("bitwise_and", "bitwise_or", "bitwise_xor")]
    outs += [bitwise(op, ext32(a), ext32(s)).astype(np.uint32).view(np.int32) for op in ("left_shift", "right_shift")]
    c = rng.integers(-128, 128, size=(8, 16)).astype(np.int8)
    d = rng.integers(0, 256, size=(8, 16)).astype(np.uint8)
    # i8 sign-extends and u8 zero-extends to 32 bits; the low 16 bits are stored in an i16.
    outs.append(low_bits(bitwise("bitwise_or", ext32(c), ext32(d)), "i16"))
    outs.append(low_bits(bitwise("bitwise_xor", ext32(c), ext32(d)), "u8"))
    return {"a": a, "b": b, "s": s, "c": c, "d": d}, outs


def wrap32(x, signed=True):
    x = np.asarray(x, np.int64) % 2**32
    return (x.astype(np.uint32).view(np.int32) if signed else x.astype(np.uint32))


@fixture
def tensor_tensor_int_exact(rng):
    a = rng.integers(-(2**31), 2**31, size=(4, 16), dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, size=(4, 16), dtype=np.int64).astype(np.int32)
    a[0, :4] = [2147483647, -2147483648, 16777217, 7]
    b[0, :4] = [1, -1, 1, 7]
    ai, bi = a.astype(np.int64), b.astype(np.int64)
    outs = [wrap32(ai + bi), wrap32(ai - bi), wrap32(ai * bi), np.maximum(a, b), np.minimum(a, b),
            (a == b).astype(np.int32), (a < b).astype(np.int32)]
    ua, ub = a.view(np.uint32), b.view(np.uint32)
    outs += [wrap32(ua.astype(np.int64) + ub.astype(np.int64), False), np.maximum(ua, ub), (ua > ub).astype(np.uint32)]
    return {"a": a, "b": b, "ua": ua, "ub": ub}, outs


@fixture
def tensor_tensor_dtypes(rng):
    a = randn(rng, 8, 16, scale=4.0)
    b = randn(rng, 8, 16, scale=4.0)
    ab, bb = cast(a, "bf16"), cast(b, "bf16")
    ah, bh = cast(a, "f16"), cast(b, "f16")
    a8, b8 = cast(a, "f8e4m3"), cast(b, "f8e5m2")
    i8 = rng.integers(-128, 128, size=(8, 16)).astype(np.int8)
    u16 = rng.integers(0, 65536, size=(8, 16)).astype(np.uint16)
    outs = [
        cast(alu("add", value(ab, "bf16"), value(bb, "bf16")), "bf16"),
        cast(alu("multiply", value(ah, "f16"), value(bh, "f16")), "f16"),
        cast(alu("subtract", value(a8, "f8e4m3"), value(b8, "f8e5m2")), "bf16"),
        cast(alu("add", value(i8, "i8"), value(u16, "u16")), "i32"),
        alu("maximum", value(u16, "u16"), a),
        cast(alu("multiply", value(ab, "bf16"), b), "f8e4m3fn"),
    ]
    return {"ab": ab, "bb": bb, "ah": ah, "bh": bh, "a8": a8, "b8": b8, "i8": i8, "u16": u16, "a": a, "b": b}, outs


@fixture
def tensor_tensor_psum_strided(rng):
    a = randn(rng, 128, 16)
    b = randn(rng, 128, 8)
    c = randn(rng, 1, 64)
    out0 = alu("add", a[:, 0::2], b)  # stride-2 src0, PSUM src1
    out1 = alu("multiply", b, np.repeat(a[:, 5:6], 8, axis=1))  # stride-0 src1
    out2 = alu("subtract", c, c[:, ::-1])  # one partition, negative stride
    return {"a": a, "b": b, "c": c}, [out0, out1, out2]



def ts(src, op0, operand0=None, op1=None, operand1=None, reverse0=False, reverse1=False):
    """tensor_scalar: t = op0(src, operand0) (reversed: op0(operand0, src)); then op1 likewise; t stays f32."""
    unary = {"abs", "square", "relu", "rsqrt", "reciprocal", "bypass"}
    t = alu(op0, src) if op0 in unary else (alu(op0, operand0, src) if reverse0 else alu(op0, src, operand0))
    if op1 is None:
        return t
    return alu(op1, t) if op1 in unary else (alu(op1, operand1, t) if reverse1 else alu(op1, t, operand1))


@fixture
def tensor_scalar_f32(rng):
    a = randn(rng, 128, 8, scale=3.0)
    a[0, :8] = f32([0.0, np.nan, np.inf, -np.inf, 1.0, -2.0, 1e-40, 0.25])
    v0 = randn(rng, 128, 1)
    v1 = randn(rng, 128, 1)
    outs = [
        ts(a, "multiply", F32(2.5), "add", F32(-1.0)),
        ts(a, "subtract", v0, "subtract", v1, reverse0=True, reverse1=True),
        ts(a, "abs"),
        ts(a, "square", None, "add", F32(1.0)),
        ts(a, "reciprocal"),
        ts(a, "relu"),
        ts(a, "equal", F32(1.0), "logical_or", F32(0.0)),
        ts(a, "multiply", v0, "add", F32(0.5)),  # on the scalar engine
        ts(a, "maximum", v1, "abs_max", v0),
        ts(a, "subtract", F32(1.0), reverse0=True),
    ]
    return {"a": a, "v0": v0, "v1": v1}, outs


@fixture
def tensor_scalar_rsqrt(rng):
    a = f32(np.abs(randn(rng, 32, 8, scale=10.0)))
    a[0, :5] = f32([0.0, np.inf, 4.0, 1e-40, 2.0])
    with np.errstate(all="ignore"):
        r = f32(1.0 / np.sqrt(a.astype(F64)))
    return {"a": a}, [r, r]


@fixture
def tensor_scalar_int(rng):
    a = rng.integers(-(2**31), 2**31, size=(4, 16), dtype=np.int64).astype(np.int32)
    a[0, :4] = [2147483647, -2147483648, -1, 2147483000]
    u = ext32(a)
    outs = [
        bitwise("left_shift", bitwise("bitwise_and", u, 255), 4).astype(np.uint32).view(np.int32),
        bitwise("right_shift", u, 3).astype(np.uint32).view(np.int32),  # operand 3.7 truncates to 3
        bitwise("bitwise_xor", u, np.uint32(0xFFFFFFFF)).astype(np.uint32).view(np.int32),  # -1.0 -> all ones
        bitwise("invert", u, 0).astype(np.uint32).view(np.int32),
        # Arithmetic on the vector engine goes through f32 (rounding beyond 2^24, saturating on write).
        cast(alu("add", value(a, "i32"), F32(1000.0)), "i32"),
        cast(alu("multiply", value(a, "i32"), F32(3.0)), "i32"),
    ]
    return {"a": a}, outs


@fixture
def tensor_scalar_bf16(rng):
    a = cast(randn(rng, 64, 16, scale=5.0), "bf16")
    t = ts(value(a, "bf16"), "multiply", F32(0.1), "add", F32(3.0))
    return {"a": a}, [cast(t, "bf16"), cast(t, "f8e4m3")]


@fixture
def tensor_scalar_unary_reverse(rng):
    a = randn(rng, 4, 8, scale=3.0)
    # isa.md 6.4: "A unary op0/op1 needs no operand (one given is ignored)": abs/square apply to the data, so the
    # reverse flags (which only swap the operands of a binary operator) and the given operands change nothing.
    outs = [
        ts(a, "abs", F32(5.0), "square", reverse0=True),
        ts(a, "abs", None, "square", reverse0=True),
        ts(a, "add", F32(1.0), "square", F32(3.0), reverse1=True),
    ]
    return {"a": a}, outs


@fixture
def scalar_tensor_tensor_ops(rng):
    a = randn(rng, 128, 8, scale=2.0)
    b = randn(rng, 128, 8, scale=2.0)
    v = randn(rng, 128, 1)
    ab = cast(randn(rng, 128, 8), "bf16")
    outs = [
        alu("multiply", alu("subtract", a, v), b),
        alu("subtract", b, alu("add", F32(1.5), a)),  # reverse0 (add commutes), reverse1: src1 - t
        alu("maximum", alu("subtract", F32(2.0), a), b),  # reverse0: 2 - src
        cast(alu("add", alu("multiply", value(ab, "bf16"), v), b), "bf16"),  # bf16 src, PSUM src1
    ]
    return {"a": a, "b": b, "v": v, "ab": ab}, outs


@fixture
def tensor_reduce_ops(rng):
    x = randn(rng, 128, 4, 8)
    x[1, 2, 3] = np.nan
    small = f32(1.0 + 0.1 * randn(rng, 128, 4, 8))
    xi = rng.integers(-(2**31), 2**31, size=(128, 4, 8), dtype=np.int64).astype(np.int32)
    lg = f32(rng.integers(0, 3, size=(128, 4, 8)))

    def fold(op, arr, axes):
        """Left fold `x0 op x1 op ...` over the last `axes` axes in row-major order."""
        kept = arr.shape[: arr.ndim - axes]
        flat = arr.reshape(int(np.prod(kept)), -1)
        acc = flat[:, 0].copy()
        for i in range(1, flat.shape[1]):
            if op.startswith("bitwise"):
                acc = bitwise(op, ext32(acc), ext32(flat[:, i])).astype(np.uint32).view(np.int32)
            else:
                acc = alu(op, acc, flat[:, i])
        return acc.reshape(kept if len(kept) > 1 else kept + (1,))

    outs = [
        fold("add", x, 1),
        -fold("maximum", x, 2),
        fold("minimum", x, 1),
        fold("subtract", x, 1),
        fold("multiply", small, 2),
        fold("bitwise_or", xi, 1),
        fold("bitwise_xor", xi, 2),
        fold("logical_and", lg, 1),
        fold("logical_or", lg, 1),
        fold("add", x.transpose(0, 2, 1), 1),  # a strided source: reduce over the stride-8 dim
    ]
    return {"x": x, "small": small, "xi": xi, "lg": lg}, outs


@fixture
def tensor_partition_reduce_ops(rng):
    x = randn(rng, 128, 8)
    xi = rng.integers(-(2**31), 2**31, size=(128, 8), dtype=np.int64).astype(np.int32)

    def pfold(op, arr):
        acc = arr[0].copy()
        for p in range(1, arr.shape[0]):
            if op.startswith("bitwise"):
                acc = bitwise(op, ext32(acc), ext32(arr[p])).astype(np.uint32).view(np.int32)
            else:
                acc = alu(op, acc, arr[p])
        return acc[None, :]

    outs = [
        pfold("add", x),
        pfold("add", x) / F32(128),
        pfold("maximum", x),
        pfold("bitwise_or", xi),
        pfold("bitwise_and", xi),
        pfold("add", x[32:48]) / F32(16),
    ]
    return {"x": x, "xi": xi}, outs


# ----------------------------------------------------------------- scans, accumulators, selection


@fixture
def tensor_tensor_scan_ops(rng):
    a = f32(0.9 * randn(rng, 4, 16))
    b = randn(rng, 4, 16)
    v = randn(rng, 4, 1)

    def scan(op0, op1, init, rev0=False, rev1=False):
        r = np.broadcast_to(f32(init), (4,)).astype(F32).copy()
        out = np.empty((4, 16), F32)
        for i in range(16):
            t = alu(op0, r, a[:, i]) if rev0 else alu(op0, a[:, i], r)
            r = alu(op1, b[:, i], t) if rev1 else alu(op1, t, b[:, i])
            out[:, i] = r
        return out

    outs = [
        scan("multiply", "add", 0.0),
        scan("subtract", "subtract", 1.5, rev0=True, rev1=True),
        scan("maximum", "multiply", v[:, 0]),
        cast(scan("multiply", "add", 0.0), "bf16"),
    ]
    return {"a": a, "b": b, "v": v}, outs


@fixture
def tensor_scalar_reduce_acc(rng):
    a = randn(rng, 64, 8, scale=2.0)
    v = randn(rng, 64, 1)
    d0 = ts(a, "multiply", F32(0.5))
    acc = row_reduce("add", d0)  # reset_reduce
    r0 = acc.copy()
    d1 = ts(a, "add", F32(1.0))
    acc = alu("add", acc, row_reduce("add", d1))  # reduce: keeps accumulating
    r1 = acc.copy()
    d2 = ts(a, "abs")
    acc = alu("maximum", v[:, 0], row_reduce("maximum", d2))  # load_reduce from a (P,1) reduce_init
    r2 = -acc  # reduce_res_negate (the accumulator itself is not negated)
    # reset_reduce on partitions 0..63, then reduce (minimum) on 32..63 only: lanes follow absolute partitions.
    d3 = ts(a, "subtract", v)
    acc = row_reduce("minimum", d3)
    acc[32:] = alu("minimum", acc[32:], row_reduce("minimum", ts(a[32:], "multiply", F32(-1.0))))
    r3 = acc.copy()  # read out with reduce_cmd=idle
    d5 = ts(a[:, :4], "multiply", F32(0.75))
    r4 = row_reduce("multiply", d5)
    return {"a": a, "v": v}, [d0, r0[:, None], r1[:, None], r2[:, None], r3[:, None], r4[:, None]]


@fixture
def tensor_scalar_cumulative_ops(rng):
    a = randn(rng, 32, 12)
    v = randn(rng, 32, 1)

    def cum(op0, imm0, op1, reg):
        reg = np.broadcast_to(f32(reg), (32,)).astype(F32).copy()
        out = np.empty_like(a)
        for i in range(a.shape[1]):
            reg = alu(op1, alu(op0, a[:, i], imm0), reg)
            out[:, i] = reg
        return out, reg

    o0, reg = cum("multiply", F32(1.0), "add", 0.0)  # reset_reduce: a cumulative sum
    o1, reg = cum("add", F32(0.5), "subtract", 0.0)  # reset_reduce, reg = t - reg
    o2, reg = cum("multiply", F32(2.0), "maximum", v[:, 0])  # load_reduce from a (P,1) imm1
    o3, reg = cum("multiply", F32(1.0), "add", reg)  # reduce: continues from the previous instruction
    o4, reg = cum("subtract", v[:, 0], "minimum", np.inf)  # reset_reduce with a (P,1) imm0
    o5, reg = cum("multiply", F32(1.0), "multiply", 1.0)
    return {"a": a, "v": v}, [o0, o1, o2, o3, o4, o5]


@fixture
def tensor_copy_predicated_ops(rng):
    a = randn(rng, 32, 16)
    c = randn(rng, 32, 16)
    p8 = rng.choice(np.array([0, 1, 7, 255], np.uint8), size=(32, 16))
    p16 = rng.choice(np.array([0, 1, 256, 65535], np.uint16), size=(32, 16))
    p32 = rng.choice(np.array([0, 1, 65536, 4294967295], np.uint32), size=(32, 16))
    ab = cast(a, "bf16")
    cb = cast(c, "bf16")
    o0 = np.where(p8 != 0, a, c)
    o1 = np.where(p16 == 0, a, c)  # reverse_pred
    o2 = np.where(p32 != 0, ab, cb)
    return {"a": a, "c": c, "p8": p8, "p16": p16, "p32": p32, "ab": ab, "cb": cb}, [o0, o1, o2]


@fixture
def reciprocal_ops(rng):
    a = randn(rng, 128, 8, scale=5.0)
    a[0, :8] = f32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 3.0, 1e38])
    ab = cast(randn(rng, 1, 64), "bf16")
    with np.errstate(all="ignore"):
        return {"a": a, "ab": ab}, [F32(1) / a, cast(F32(1) / value(ab, "bf16"), "bf16")]


@fixture
def exponential_reduce(rng):
    a = randn(rng, 64, 16, scale=3.0)
    m = randn(rng, 64, 1)
    init = randn(rng, 64, 1)
    with np.errstate(all="ignore"):
        d0 = act("exp", alu("subtract", a, m))
        d1 = act("exp", alu("subtract", a, F32(2.0)))
    r0 = row_reduce("add", d0)  # reset_reduce
    r1 = alu("add", init[:, 0], row_reduce("add", d1))  # load_reduce from reduce_init
    r2 = alu("add", r1, row_reduce("add", d0))  # reduce
    return {"a": a, "m": m, "init": init}, [d0, d1, r0[:, None], r1[:, None], r2[:, None], cast(d0, "bf16")]


@fixture
def range_select_ops(rng):
    a = randn(rng, 32, 16)
    lo = f32(rng.integers(-2, 10, size=(32, 1)))
    hi = f32(rng.integers(5, 20, size=(32, 1)))
    neg = F32(-3.4028235e38)

    def rs(cmp0, b0, cmp1, b1, start, src):
        idx = f32(start + np.arange(16))[None, :]
        keep = (alu(cmp0, idx, b0) != 0) & (alu(cmp1, idx, b1) != 0)
        return np.where(keep, src, neg).astype(F32)

    d0 = rs("greater_equal", lo, "less", hi, 0, a)
    r0 = row_reduce("maximum", d0)
    d1 = rs("greater", F32(3.0), "less_equal", F32(9.0), 5, a)
    r1 = alu("maximum", r0, row_reduce("maximum", d1))  # reduce
    d2 = rs("equal", F32(20.0), "less", F32(100.0), 12, a)
    return {"a": a, "lo": lo, "hi": hi}, [d0, r0[:, None], d1, r1[:, None], d2]


@fixture
def select_reduce_ops(rng):
    a = randn(rng, 32, 16)
    p8 = rng.choice(np.array([0, 1, -1, 5], np.int8), size=(32, 16))
    p8[0, :] = 0
    pu = rng.choice(np.array([0, 1, 300], np.uint16), size=(32, 16))
    v = randn(rng, 32, 1)
    d0 = np.where(p8 != 0, a, F32(-np.inf)).astype(F32)
    r0 = row_reduce("maximum", d0)
    d1 = np.where(pu == 0, a, v).astype(F32)  # reverse_pred, (P,1) on_false
    r1 = alu("maximum", r0, row_reduce("maximum", d1))
    ab = cast(a, "bf16")
    d2 = cast(np.where(p8 != 0, value(ab, "bf16"), F32(0.5)), "bf16")
    return {"a": a, "p8": p8, "pu": pu, "v": v, "ab": ab}, [d0, r0[:, None], d1, r1[:, None], d2]


# ----------------------------------------------------------------- Scalar engine


def act_input(rng, p, f):
    x = randn(rng, p, f, scale=2.0)
    x[0, :8] = f32([0.0, 1.0, -1.0, 0.5, -3.0, 10.0, -10.0, 1e-3])
    return x


@fixture
def activation_funcs(rng):
    x = act_input(rng, 128, 8)
    return {"x": x}, [act(fn, x) for fn in ACT_FUNCS]


@fixture
def activation_scale_bias_reduce(rng):
    x = act_input(rng, 64, 16)
    s = randn(rng, 64, 1, scale=0.5)
    b = randn(rng, 64, 1, scale=0.5)
    xb = cast(randn(rng, 64, 16), "bf16")
    t0 = alu("add", alu("multiply", x, s), b)
    d0 = act("exp", t0)
    acc = row_reduce("add", d0)  # reset_reduce
    r0 = acc.copy()
    d1 = act("tanh", alu("add", alu("multiply", x, F32(0.5)), F32(-1.0)))  # from PSUM, reduce
    acc = alu("add", acc, row_reduce("add", d1))
    r1 = acc.copy()
    d2 = act("sigmoid", x[32:64])  # partitions 32..63 only, reduce
    acc[32:] = alu("add", acc[32:], row_reduce("add", d2))
    r2 = acc.copy()  # read out on 0..63 with idle
    d3 = cast(act("gelu_apprx_tanh", alu("multiply", value(xb, "bf16"), F32(2.0))), "bf16")
    return {"x": x, "s": s, "b": b, "xb": xb}, [d0, r0[:, None], d1, r1[:, None], r2[:, None], d3]


@fixture
def activation_reduce_ops(rng):
    x = act_input(rng, 32, 16)
    b = randn(rng, 32, 1)
    d0 = act("gelu", alu("multiply", x, F32(0.5)))
    d1 = act("relu", alu("add", x, b))
    d2 = act("sin", alu("add", alu("multiply", x, F32(-1.0)), F32(0.25)))
    return {"x": x, "b": b}, [d0, row_reduce("add", d0)[:, None], d1, row_reduce("maximum", d1)[:, None],
                             d2, row_reduce("minimum", d2)[:, None]]


@fixture
def activate2_ops(rng):
    x = act_input(rng, 32, 16)
    v = randn(rng, 32, 1)
    alpha = f32(np.abs(randn(rng, 32, 1, scale=0.2)))
    d0 = act("prelu", alu("subtract", v, alu("multiply", x, F32(2.0))), alpha=0.1)
    acc = row_reduce("abs_max", d0)
    r0 = acc.copy()
    d1 = act("exp", alu("add", x, F32(-1.0)))
    acc = row_reduce("minimum", d1)  # reset_reduce
    r1 = acc.copy()
    d2 = act("sigmoid", alu("add", alu("multiply", x, v), F32(0.5)))
    acc = alu("abs_min", acc, row_reduce("abs_min", d2))  # reduce
    r2 = acc.copy()
    d3 = act("square", alu("subtract", F32(3.0), x))  # reverse0
    r3 = row_reduce("add", d3)
    d4 = np.where(x > 0, x, (alpha.astype(F64) * x.astype(F64))).astype(F32)  # prelu with a (P,1) alpha
    return {"x": x, "v": v, "alpha": alpha}, [d0, r0[:, None], d1, r1[:, None], d2, r2[:, None], d3, r3[:, None], d4]


# ----------------------------------------------------------------- Tensor engine


def matmul(st, mv, acc=None):
    """isa.md nc_matmul: acc = acc + st[k, m] * mv[k, n] for k ascending, f32 multiply and add."""
    st = f32(st)
    mv = f32(mv)
    out = np.zeros((st.shape[1], mv.shape[1]), F32) if acc is None else f32(acc).copy()
    with np.errstate(all="ignore"):
        for k in range(st.shape[0]):
            out = out + np.outer(st[k], mv[k]).astype(F32)
    return out


@fixture
def nc_matmul_f32(rng):
    s = randn(rng, 128, 64)
    m = randn(rng, 128, 32)
    return {"s": s, "m": m}, [matmul(s, m)]


@fixture
def nc_matmul_bf16(rng):
    s = cast(randn(rng, 128, 64), "bf16")
    m = cast(randn(rng, 128, 32), "bf16")
    sv, mv = value(s, "bf16"), value(m, "bf16")
    r = matmul(sv, mv)
    t = matmul(sv[32:64, :32], mv[32:64, :32])  # on the PE tile at [32, 32]
    return {"s": s, "m": m}, [r, cast(r, "bf16"), t]


@fixture
def nc_matmul_accumulate(rng):
    s = randn(rng, 128, 16)
    m = randn(rng, 128, 24)
    acc = matmul(s, m)
    acc = matmul(s[:32], m[:32] * F32(0.5), acc)  # K = 32 on partitions 0..31
    acc = matmul(s[64:], m[64:], acc)  # K = 64 on partitions 64..127
    sb = cast(s, "bf16")
    mb = cast(m, "bf16")
    accb = cast(matmul(value(sb, "bf16"), value(mb, "bf16")), "bf16")
    accb = cast(matmul(value(sb, "bf16")[:32], value(mb, "bf16")[:32], value(accb, "bf16")), "bf16")
    return {"s": s, "m": m, "mh": f32(m * F32(0.5)), "sb": sb, "mb": mb}, [acc, accb]


@fixture
def nc_matmul_deferred(rng):
    s = randn(rng, 128, 128)
    m1 = randn(rng, 128, 64)
    m2 = randn(rng, 128, 64)
    a = matmul(s, m2, matmul(s, m1))
    b = matmul(s, m2)
    a = matmul(s, m1, a)
    b = matmul(s, m1, b)
    psum = np.concatenate([a, b], axis=1)  # A in columns 0..63, B in 64..127
    psum[:, :64] = matmul(s, m1, psum[:, :64])
    psum[:, 32:96] = matmul(s, m2, psum[:, 32:96])  # C overlaps the end of A and the start of B
    d = cast(matmul(s, m1), "bf16")  # a bf16 region: each matmul's sum rounded as it is written
    d = cast(matmul(s, m2, value(d, "bf16")), "bf16")
    return {"s": s, "m1": m1, "m2": m2}, [a, b, psum, d]


@fixture
def nc_matmul_fp8(rng):
    s = cast(randn(rng, 64, 2, 32, scale=2.0), "f8e4m3")
    m = cast(randn(rng, 64, 2, 48, scale=2.0), "f8e5m2")
    sv, mv = value(s, "f8e4m3"), value(m, "f8e5m2")
    acc = np.zeros((32, 48), F32)
    for k in range(64):
        for j in range(2):
            acc = acc + np.outer(sv[k, j], mv[k, j]).astype(F32)
    a = cast(randn(rng, 32, 16, scale=4.0), "f8e4m3fn")
    b = cast(randn(rng, 32, 8, scale=4.0), "f8e4m3fn")
    plain = matmul(value(a, "f8e4m3fn"), value(b, "f8e4m3fn"))
    return {"s": s, "m": m, "a": a, "b": b}, [acc, plain]


@fixture
def nc_matmul_transpose(rng):
    sb = cast(randn(rng, 32, 16), "bf16")
    sb[3, 5] = 0x7FC1  # a NaN payload survives a bit copy
    eye_b = cast(np.eye(32, dtype=F32), "bf16")
    s = randn(rng, 32, 16)
    s[3, 5] = np.nan
    s[4, 6] = np.inf
    eye = np.eye(32, dtype=F32)
    eye[31, 31] = 2.0  # column 31 is not a 0/1 column: an ordinary matmul (0 * NaN is NaN)
    out1 = s.T.copy()
    out1[:, 31] = matmul(s, eye[:, 31:32])[:, 0]
    return {"sb": sb, "eye_b": eye_b, "s": s, "eye": eye}, [sb.T.copy(), out1, f32(value(sb, "bf16").T)]


@fixture
def nc_transpose_ops(rng):
    a = randn(rng, 128, 64)
    b = cast(randn(rng, 32, 16), "bf16")
    c = randn(rng, 8, 32)
    return {"a": a, "b": b, "c": c}, [a.T.copy(), b.T.copy(), c.T.copy()]


# ----------------------------------------------------------------- top-8, statistics


def sort_key_desc(row):
    """Indices of `row` by descending f32 value with NaN above +inf, stable."""
    key = np.where(np.isnan(row), np.inf, row).astype(F64)
    nan_first = np.isnan(row).astype(np.int8)
    return np.lexsort((np.arange(len(row)), -key, -nan_first))


@fixture
def max8_ops(rng):
    a = f32(np.round(randn(rng, 32, 64, scale=8.0)))  # rounded: many duplicates
    a[1, 5] = np.nan
    a[1, 9] = np.inf
    a[2, :] = 3.0
    b = cast(randn(rng, 4, 8), "bf16")
    o0 = np.stack([a[p, sort_key_desc(a[p])[:8]] for p in range(32)])
    bv = value(b, "bf16")
    o1 = np.stack([b[p, sort_key_desc(bv[p])[:8]] for p in range(4)])
    return {"a": a, "b": b}, [o0, o1]


def find_index8(src, vals, none):
    out = np.full(vals.shape, none, np.uint64)
    for p in range(src.shape[0]):
        taken = set()
        for j in range(8):
            for i in range(src.shape[1]):
                if src[p, i] == vals[p, j] and i not in taken:
                    taken.add(i)
                    out[p, j] = i
                    break
    return out


@fixture
def nc_find_index8_ops(rng):
    a = f32(np.round(randn(rng, 32, 40, scale=4.0)))
    vals = np.stack([a[p, rng.integers(0, 40, size=8)] for p in range(32)]).astype(F32)
    vals[0, 3] = 1000.0  # absent
    vals[1, :] = vals[1, 0]  # one value eight times
    vals[2, 0] = np.nan
    a[3, 5] = -0.0
    a[3, :5] = 1.0
    vals[3, 1] = 0.0  # f32 equality: 0.0 finds -0.0
    o0 = find_index8(a, vals, 0xFFFFFFFF).astype(np.uint32)
    o1 = find_index8(a, vals, 0xFFFF).astype(np.uint16)
    return {"a": a, "vals": vals}, [o0, o1]


@fixture
def nc_match_replace8_ops(rng):
    a = f32(np.round(randn(rng, 32, 24, scale=3.0)))
    a[0, :11] = f32([1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8])  # the isa.md example
    vals = np.stack([a[p, rng.integers(0, 24, size=8)] for p in range(32)]).astype(F32)
    vals[0] = f32([3, 8, 8, 8, 8, 8, 8, 8])
    vals[1, 2] = 999.0
    dst = a.copy()
    idx = np.full((32, 8), 0xFFFFFFFF, np.uint64)
    for p in range(32):
        replaced = set()
        for j in range(7, -1, -1):
            for i in range(24):
                if a[p, i] == vals[p, j] and i not in replaced:
                    replaced.add(i)
                    dst[p, i] = F32(-0.5)
                    idx[p, j] = i
                    break
    return {"a": a, "vals": vals}, [dst, idx.astype(np.uint32)]


def bn_stats_row(x):
    out = []
    for grp in (x[0::2], x[1::2]):
        n = len(grp)
        if n == 0:
            out += [0.0, 0.0, 0.0]
            continue
        s = F32(0)
        for v in grp:
            s = F32(s + v)
        mean = F32(s / F32(n))
        m2 = F32(0)
        for v in grp:
            d = F32(v - mean)
            m2 = F32(m2 + F32(d * d))
        out += [F32(n), mean, m2]
    return f32(out)


def bn_aggr_row(t):
    state = None
    for k in range(0, len(t), 3):
        nb, mb, m2b = F32(t[k]), F32(t[k + 1]), F32(t[k + 2])
        if nb == 0:
            continue
        if state is None:
            state = (nb, mb, m2b)
            continue
        na, ma, m2a = state
        n = F32(na + nb)
        d = F32(mb - ma)
        mean = F32(ma + F32(F32(d * nb) / n))
        m2 = F32(F32(m2a + m2b) + F32(F32(F32(F32(d * d) * na) * nb) / n))
        state = (n, mean, m2)
    if state is None:
        return f32([0.0, 0.0])
    return f32([state[1], F32(state[2] / state[0])])


@fixture
def bn_stats_aggr(rng):
    x = randn(rng, 32, 15, scale=2.0) + F32(1.5)
    x1 = randn(rng, 32, 1)
    st = np.stack([bn_stats_row(r) for r in x])
    st1 = np.stack([bn_stats_row(r) for r in x1])
    # Hand-made triples, one empty, merged left to right.
    t = np.zeros((32, 9), F32)
    t[:, 0] = f32(rng.integers(1, 9, size=32))
    t[:, 1] = randn(rng, 32)
    t[:, 2] = f32(np.abs(randn(rng, 32)))
    t[:, 3:6] = 0.0
    t[:, 6] = f32(rng.integers(1, 9, size=32))
    t[:, 7] = randn(rng, 32)
    t[:, 8] = f32(np.abs(randn(rng, 32)))
    t[0, :] = 0.0
    ag = np.stack([bn_aggr_row(r) for r in st])
    ag2 = np.stack([bn_aggr_row(r) for r in t])
    return {"x": x, "x1": x1, "t": t}, [st, st1, ag, ag2]


# ----------------------------------------------------------------- GpSimd selection and gathers


@fixture
def affine_select_ops(rng):
    a = randn(rng, 128, 16)
    o0 = np.where(iota_values(128, [(-1, 16)], 0, 1) >= 0, a, F32(-np.inf)).astype(F32)
    v = iota_values(32, [(1, 2), (-3, 8)], 5, -2)
    b = randn(rng, 32, 16)
    o1 = cast(np.where(v != 0, b, F32(0.0)), "bf16")
    return {"a": a, "b": b}, [o0, o1]


@fixture
def nc_stream_shuffle_ops(rng):
    a = randn(rng, 64, 8)
    fill = randn(rng, 64, 8)
    mask0 = list(range(31, 0, -1)) + [255]
    o0 = fill[:32].copy()
    for d in range(32):
        if mask0[d] != 255:
            o0[d] = a[32 + mask0[d]]
    mask1 = [(5 * i + 3) % 32 for i in range(32)]
    mask1[7] = 255
    o1 = fill.copy()
    for d in range(64):
        q, i = divmod(d, 32)
        if mask1[i] != 255:
            o1[d] = a[32 * q + mask1[i]]
    return {"a": a, "fill": fill}, [o0, o1]


@fixture
def local_gather_ops(rng):
    src = randn(rng, 32, 16)
    idx = rng.integers(0, 16, size=(32, 2)).astype(np.uint16)
    o0 = np.empty((32, 32), F32)
    for c in range(2):
        flat = [int(idx[16 * c + p, f]) for f in range(2) for p in range(16)]
        for p in range(16 * c, 16 * c + 16):
            o0[p] = src[p, flat]
    idx2 = rng.integers(0, 15, size=(32, 1)).astype(np.uint16)  # E = 2 reads idx and idx + 1
    o1 = np.empty((32, 10), F32)
    for c in range(2):
        flat = [int(idx2[16 * c + p, 0]) for p in range(16)][:5]
        for p in range(16 * c, 16 * c + 16):
            o1[p] = np.concatenate([src[p, i:i + 2] for i in flat])
    return {"src": src, "idx": idx, "idx2": idx2}, [o0, o1]


@fixture
def nc_n_gather_ops(rng):
    src = randn(rng, 64, 40)
    ind = rng.integers(0, 40, size=(64, 8)).astype(np.uint32)
    ind[0] = [39, 0, 0, 39, 1, 2, 3, 38]
    srcb = cast(randn(rng, 32, 16), "bf16")
    indb = rng.integers(0, 16, size=(32, 4)).astype(np.uint32)
    o0 = np.take_along_axis(src, ind.astype(np.int64), axis=1)
    o1 = np.take_along_axis(srcb, indb.astype(np.int64), axis=1)
    return {"src": src, "ind": ind, "srcb": srcb, "indb": indb}, [o0, o1]


def seq_bounds(ids):
    n = len(ids)
    starts = np.empty(n, np.int64)
    ends = np.empty(n, np.int64)
    i = 0
    while i < n:
        j = i
        while j < n and ids[j] == ids[i]:
            j += 1
        starts[i:j] = n if ids[i] == 0 else i
        ends[i:j] = -1 if ids[i] == 0 else j
        i = j
    return np.concatenate([starts, ends])[None, :]


@fixture
def sequence_bounds_ops(rng):
    ex = f32([[0, 1, 1, 2, 2, 2, 0, 3, 3]])  # the isa.md example
    ids = []
    seg = 1
    while len(ids) < 60:
        ids += [seg] * int(rng.integers(1, 6)) + [0] * int(rng.integers(0, 3))
        seg += 1
    ids = np.array([[0, 0] + ids[:62]], np.int32)
    return {"ex": ex, "ids": ids}, [f32(seq_bounds(ex[0])), seq_bounds(ids[0]).astype(np.int32)]


@fixture
def nonzero_with_count_ops(rng):
    a = randn(rng, 32, 16)
    a[a > 0.3] = 0.0
    a[0, :4] = f32([np.nan, -0.0, 0.0, np.inf])
    b = rng.integers(-2, 3, size=(48, 12)).astype(np.int32)
    o0 = np.full((32, 17), 77, np.int32)
    for p in (0, 16):
        nz = [i for i in range(16) if a[p, i] != 0 or np.isnan(a[p, i])]
        o0[p, : len(nz)] = nz
        o0[p, len(nz):16] = -1
        o0[p, 16] = len(nz)
    o1 = np.full((48, 13), 77, np.int32)
    for p in (0, 16, 32):
        nz = [i + 100 for i in range(12) if b[p, i] != 0]
        o1[p, : len(nz)] = nz
        o1[p, len(nz):12] = -7
        o1[p, 12] = len(nz)
    return {"a": a, "b": b}, [o0, o1]


# ----------------------------------------------------------------- random numbers (isa.md 6.5)


@fixture
def rng_streams(rng):
    vec = Engine(0)
    gps = Engine(0)
    o0 = vec.draw(0, 128, 4)  # vector rng, u32
    o1 = gps.draw(0, 128, 4).view(np.int32)  # gpsimd rng, its own generators
    o2 = (vec.draw(0, 4, 8) & 0xFF).astype(np.uint8)  # vector lanes 0..3 continue; low 8 bits
    o3 = (gps.draw(32, 32, 2) & 0xFFFF).astype(np.uint16)  # lanes 32..63 continue
    return {}, [o0, o1, o2, o3]


@fixture
def rand2_dropout_seeded(rng):
    seed = np.array([[12345]], np.uint32)
    lo = randn(rng, 32, 1)
    hi = f32(lo + F32(2.0))
    x = randn(rng, 32, 16)
    vec = Engine(12345)
    u = unit(vec.draw(0, 32, 8))
    o0 = alu("add", F32(-1.0), alu("multiply", u, F32(3.0) - F32(-1.0)))
    u = unit(vec.draw(0, 32, 8))
    o1 = alu("add", lo, alu("multiply", u, alu("subtract", hi, lo)))
    u = unit(vec.draw(0, 32, 16))
    o2 = np.where(u < F32(0.3), F32(0.0), x).astype(F32)
    xb = cast(x, "bf16")
    u = unit(vec.draw(0, 32, 16))
    o3 = np.where(u < F32(0.5), np.uint16(0), xb).astype(np.uint16)
    return {"seed": seed, "lo": lo, "hi": hi, "x": x, "xb": xb}, [o0, o1, o2, o3]


# ----------------------------------------------------------------- control: registers, branches, dynamic loops


@fixture
def reg_alu_branch(rng):
    n = np.array([-1234567], np.int32)
    f = f32([1.0])
    c = np.array([-1], np.int8)
    h = np.array([40000], np.uint16)
    r0, r1, r2 = -1234567, -5, 1000000

    def w(x):
        return ((x + 2**31) % 2**32) - 2**31

    def u(x):
        return x % 2**32

    vals = [
        w(r0 + r1), w(r0 - 7), w(r2 * r2),
        int(r0 / r1), r0 - int(r0 / r1) * r1,  # truncating division and remainder
        w(u(r0) & 0xFFFF), w(u(r0) | u(r1)), w(u(r0) ^ u(r2)),
        w(u(r0) << 1), w(u(r0) >> 4), w(r0 >> 4),
        min(r0, r1), max(r0, r1), max(r0, r1),
        0x3F800000, -1, 40000,
        15, 5, 8, -1, -4, 2, 1,
    ]
    o0 = np.array([vals], np.int64).astype(np.int32)
    o1 = np.array([[u(r0) & 0xFF] * 2], np.uint8)
    return {"n": n, "f": f, "c": c, "h": h}, [o0, o1]


@fixture
def dynamic_loop_pipeline(rng):
    a = randn(rng, 64, 8)
    n = np.array([4], np.int32)
    out = alu("add", alu("multiply", a, F32(2.0)), F32(1.0))
    ramp = iota_values(16, [(1, 8)], 0, 8)
    return {"a": a, "n": n}, [out, ramp]


# ----------------------------------------------------------------- MX (packed x4) instructions

FP4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], F64)


def lanes_fp8(packed, dt):
    """[..., F] uint32 packed fp8 x4 -> [..., F, 4] float64 lane values (lane 0 in the low byte)."""
    b = np.asarray(packed, np.uint32)[..., None] >> (8 * np.arange(4, dtype=np.uint32))
    codes = (b & 0xFF).astype(np.uint8)
    return codes.view(FLOAT_NP[dt]).astype(F64)


def lanes_fp4(packed):
    """[..., F] uint16 packed fp4 x4 -> [..., F, 4] (lane 0 in the low nibble of the low byte)."""
    n = (np.asarray(packed, np.uint32)[..., None] >> (4 * np.arange(4, dtype=np.uint32))) & 0xF
    mag = FP4[n & 7]
    return np.where(n & 8, -mag, mag)


def scale_row(k, start=0):
    """The scale partition of data partition k (isa.md nc_matmul_mx)."""
    return start + 32 * (k // 32) + (k % 32) // 8


def matmul_mx(S, s_codes, V, v_codes, P):
    """isa.md nc_matmul_mx with lane values S [P, M, 4], V [P, N, 4] and scale codes indexed by data partition."""
    M, N = S.shape[1], V.shape[1]
    acc = np.zeros((M, N), F32)
    with np.errstate(all="ignore"):
        for k in range(P):
            ss = s_codes[scale_row(k)].astype(F64)  # [M]
            vs = v_codes[scale_row(k)].astype(F64)  # [N]
            sf = np.where(ss == 255, np.nan, np.exp2(ss - 127))
            vf = np.where(vs == 255, np.nan, np.exp2(vs - 127))
            for q in range(4):
                term = (np.outer(S[k, :, q], V[k, :, q]) * sf[:, None]) * vf[None, :]
                acc = acc + term.astype(F32)
    return acc


def finite_codes(rng, shape, dt):
    """Random fp8 codes of `dt` that are finite."""
    codes = rng.integers(0, 256, size=shape).astype(np.uint8)
    v = codes.view(FLOAT_NP[dt]).astype(F64)
    return np.where(np.isfinite(v), codes, np.uint8(0x38))


def pack8(codes):
    """[..., F, 4] uint8 -> [..., F] uint32."""
    c = codes.astype(np.uint32)
    return (c[..., 0] | (c[..., 1] << 8) | (c[..., 2] << 16) | (c[..., 3] << 24)).astype(np.uint32)


@fixture
def nc_matmul_mx_ops(rng):
    sc = finite_codes(rng, (32, 8, 4), "f8e4m3fn")
    vc = finite_codes(rng, (32, 16, 4), "f8e5m2")
    s_scale = rng.integers(118, 136, size=(4, 8)).astype(np.uint8)
    v_scale = rng.integers(118, 136, size=(4, 16)).astype(np.uint8)
    s_scale[2, 3] = 255  # a NaN scale: every term of row m = 3 from partitions 16..23 is NaN
    st, mv = pack8(sc), pack8(vc)
    o0 = matmul_mx(lanes_fp8(st, "f8e4m3fn"), s_scale, lanes_fp8(mv, "f8e5m2"), v_scale, 32)
    # 64 partitions: two quadrants of scales (partitions 0..3 and 32..35); fp8 stationary with an fp4 moving.
    sc2 = finite_codes(rng, (64, 8, 4), "f8e4m3fn")
    st2 = pack8(sc2)
    mv2 = rng.integers(0, 1 << 16, size=(64, 8)).astype(np.uint16)
    s2 = rng.integers(120, 134, size=(36, 8)).astype(np.uint8)
    v2 = rng.integers(120, 134, size=(36, 8)).astype(np.uint8)
    o1 = matmul_mx(lanes_fp8(st2, "f8e4m3fn"), s2, lanes_fp4(mv2), v2, 64)
    return {"st": st, "mv": mv, "ss": s_scale, "vs": v_scale, "st2": st2, "mv2": mv2, "ss2": s2, "vs2": v2}, [o0, o1]


def quantize_mx(src, dt, emax):
    """isa.md quantize_mx: returns packed [P, F/4] uint32 and scale codes [scale partitions, F/4]."""
    P, F = src.shape
    n_scale = 32 * (P // 32 - 1) + 4
    scales = np.zeros((n_scale, F // 4), np.uint8)
    out = np.zeros((P, F // 4, 4), np.uint8)
    big = float(mld.finfo(FLOAT_NP[dt]).max)
    for g in range(P // 8):
        for j in range(F // 4):
            blk = src[8 * g: 8 * g + 8, 4 * j: 4 * j + 4].astype(F64)
            amax = np.max(np.abs(blk))
            e = -127 if amax == 0 else int(np.floor(np.log2(amax))) - (emax - 1)
            e = max(-127, min(127, e))
            scales[scale_row(8 * g), j] = e + 127
            scaled = np.clip(blk * 2.0 ** (-e), -big, big)
            out[8 * g: 8 * g + 8, j, :] = f32(scaled).astype(FLOAT_NP[dt]).view(np.uint8)
    return pack8(out), scales


@fixture
def quantize_mx_ops(rng):
    a = cast(randn(rng, 32, 16, scale=3.0), "bf16")
    a[0:8, 4:8] = 0  # an all-zero group: scale code 0 (e = -127)
    a[8, 0] = cast(f32([1000.0]), "bf16")[0]
    q0, s0 = quantize_mx(value(a, "bf16"), "f8e4m3fn", 8)
    b = randn(rng, 64, 8, scale=0.01).astype(np.float16)
    q1, s1 = quantize_mx(b.astype(F32), "f8e5m2", 15)
    s1 = np.concatenate([s1[0:4], s1[32:36]])
    return {"a": a, "b": b}, [q0, s0, q1, s1]


# ----------------------------------------------------------------- dtype sweep of the main elementwise instructions

SWEEP_DTYPES = ["f32", "bf16", "f16", "tf32", "f8e4m3", "f8e5m2", "f8e4m3fn", "i8", "i16", "i32", "u8", "u16", "u32", "bool"]


def sweep_input(rng, dt):
    if dt in INT_NP:
        info = np.iinfo(INT_NP[dt])
        x = rng.integers(info.min, int(info.max) + 1, size=(4, 16), dtype=np.int64).astype(INT_NP[dt])
        x[0, :3] = [info.min, info.max, 0]
        return x
    if dt == "bool":
        return rng.integers(0, 2, size=(4, 16)).astype(bool)
    x = randn(rng, 4, 16, scale=6.0)
    x[0, :4] = f32([-0.0, 0.0, 1.0, -2.5])
    return cast(x, dt)


@fixture
def elementwise_dtype_sweep(rng):
    ins, outs = {}, []
    for k, dt in enumerate(SWEEP_DTYPES):
        x = sweep_input(rng, dt)
        ins[f"x{k}"] = x
        v = value(x, dt) if dt != "tf32" else f32(x)
        outs.append(cast(alu("add", v, v), dt))  # tensor_tensor on vector
        outs.append(cast(ts(v, "multiply", F32(1.5), "add", F32(-2.0)), dt))  # tensor_scalar on vector
        outs.append(cast(act("copy", alu("add", alu("multiply", v, F32(2.0)), F32(0.0))), dt))  # activation, no bias
        outs.append(x.copy())  # tensor_copy on gpsimd, equal dtypes: bits
    return ins, outs


# ----------------------------------------------------------------- edges: decoding, out-of-bounds, shared state


@fixture
def decode_tf32_bool_bytes(rng):
    # tf32 decoding ignores the low 13 bits of the container; bool reads any nonzero byte as 1.0.
    # Raw container bits travel as `<u4` (a float array would be rounded into tf32 by value on input).
    t = rng.integers(0, 1 << 32, size=(4, 16), dtype=np.uint64).astype(np.uint32)
    t[0, :2] = [0x3F801FFF, 0xBF800001]
    t = np.where((t & 0x7F800000) == 0x7F800000, t | 0x00400000, t).astype(np.uint32)  # NaNs keep a high payload bit
    dec = (t & ~np.uint32(0x1FFF)).view(F32)
    b = rng.integers(0, 256, size=(4, 16)).astype(np.uint8)
    b[0, :3] = [0, 1, 128]
    h = rng.integers(0, 1 << 16, size=(4, 16)).astype(np.uint16)
    h[0, :4] = [0x0001, 0x83FF, 0x7C00, 0xFC00]  # f16 subnormals and infinities
    hv = h.view(np.float16)
    h = np.where(np.isnan(hv), np.uint16(0x3C00), h)
    hv = h.view(np.float16)
    return {"t": t, "b": b, "h": hv}, [f32(dec), (b != 0).astype(F32), hv.astype(F32)]


@fixture
def dma_oob_skip_dynamic(rng):
    a = randn(rng, 8, 16)
    fill = randn(rng, 8, 16)
    # r1 = 5: the source starts 5 rows (80 elements) in; rows 3..7 of the 8 leave the tensor and are skipped.
    o0 = fill.copy()
    o0[:3] = a[5:8]
    # Gather with rows of 16 elements at a pitch of 8: row index 14 and 15 run past the end (partially), -1 is before it.
    idx = np.array([[0], [14], [7], [-1], [15], [3]], np.int32)
    fill2 = randn(rng, 6, 16)
    flat = a.reshape(-1)
    o1 = fill2.copy()
    for w in range(6):
        i = int(idx[w, 0])
        if i >= 0 and i * 8 + 16 <= flat.size:
            o1[w] = flat[i * 8: i * 8 + 16]
    return {"a": a, "fill": fill, "fill2": fill2, "idx": idx}, [o0, o1]


@fixture
def accumulators_shared(rng):
    a = randn(rng, 32, 8)
    # Vector: tensor_scalar_reduce (add) resets, range_select then folds its row maximum into the same accumulators,
    # select_reduce continues, and tensor_scalar_cumulative with reduce starts from the result.
    acc = row_reduce("add", a)
    idx = f32(np.arange(8))[None, :]
    rs = np.where((idx >= 2) & (idx < 6), a, F32(-3.4028235e38)).astype(F32)
    acc = alu("maximum", acc, row_reduce("maximum", rs))
    r1 = acc.copy()
    sel = np.where(a > 0, a, F32(-np.inf)).astype(F32)
    acc = alu("maximum", acc, row_reduce("maximum", sel))
    r2 = acc.copy()
    reg = acc.copy()
    cum = np.empty_like(a)
    for i in range(8):
        reg = alu("add", a[:, i], reg)
        cum[:, i] = reg
    # Scalar: activation resets with add, activate2 reduce adds, activation_reduce resets again with maximum.
    sacc = row_reduce("add", act("exp", a))
    sacc = alu("add", sacc, row_reduce("add", act("copy", alu("multiply", a, F32(3.0)))))
    s1 = sacc.copy()
    s2 = row_reduce("maximum", act("tanh", a))
    return {"a": a}, [r1[:, None], r2[:, None], cum, s1[:, None], s2[:, None]]


@fixture
def rng_seed_engines(rng):
    seed = np.array([[7]], np.uint32)
    vec = Engine(7)
    gps = Engine(0)
    o0 = vec.draw(0, 8, 4)  # reseeded vector lanes
    o1 = gps.draw(0, 8, 4)  # gpsimd keeps its seed-0 stream
    vec2 = Engine(7)
    o2 = vec2.draw(0, 8, 4)  # seeding again restarts the stream
    return {"seed": seed}, [o0, o1, o2]


@fixture
def nc_matmul_f16_tf32(rng):
    sh = randn(rng, 64, 16).astype(np.float16)
    mh = randn(rng, 64, 8).astype(np.float16)
    o0 = matmul(sh.astype(F32), mh.astype(F32))
    st = cast(randn(rng, 64, 16), "tf32")
    mt = cast(randn(rng, 64, 8), "tf32")
    # Garbage in the low 13 bits of a tf32 container is ignored when the value is read.
    st_dirty = st.view(np.uint32) | rng.integers(0, 1 << 13, size=st.shape).astype(np.uint32)  # raw `<u4` bits
    o1 = matmul(st, mt)
    return {"sh": sh, "mh": mh, "st": st_dirty, "mt": mt}, [o0, o1]


@fixture
def dynamic_offsets_double_signal(rng):
    a = randn(rng, 32, 16)
    # vector reads columns 4..11 through a register offset (r2 = 4, scale 4 bytes), gpsimd writes through r3.
    o0 = alu("multiply", a[:, 4:12], F32(3.0))
    o1 = a[:, 0:8].copy()
    return {"a": a}, [o0, o1]



@fixture
def scalar_operand_dtypes(rng):
    a = randn(rng, 32, 8)
    vb = cast(randn(rng, 32, 1), "bf16")
    vi = rng.integers(-5, 6, size=(32, 1)).astype(np.int32)
    vh = randn(rng, 32, 1).astype(np.float16)
    o0 = ts(a, "multiply", value(vb, "bf16"), "add", f32(vi))
    t = alu("add", alu("multiply", a, vh.astype(F32)), value(vb, "bf16"))
    o1 = act("sigmoid", t)
    o2 = ts(a, "subtract", value(vb, "bf16"), reverse0=True)  # the (P,1) operand read from PSUM
    return {"a": a, "vb": vb, "vi": vi, "vh": vh}, [o0, o1, o2]


@fixture
def local_gather_p128(rng):
    src = cast(randn(rng, 128, 32), "bf16")
    idx = rng.integers(0, 29, size=(128, 1)).astype(np.uint16)
    out = np.empty((128, 64), np.uint16)
    for c in range(8):
        flat = [int(idx[16 * c + p, 0]) for p in range(16)]
        for p in range(16 * c, 16 * c + 16):
            out[p] = np.concatenate([src[p, i:i + 4] for i in flat])
    return {"src": src, "idx": idx}, [out]


@fixture
def rand2_dropout_edges(rng):
    prob = f32(rng.choice([0.0, 0.25, 1.0], size=(16, 1)))
    x = randn(rng, 16, 8)
    vec = Engine(0)
    u = unit(vec.draw(0, 16, 8))
    o0 = np.where(u < prob, F32(0.0), x).astype(F32)  # (P,1) prob: 0 keeps all, 1 drops all
    u = unit(vec.draw(0, 16, 8))
    o1 = cast(alu("add", F32(0.0), alu("multiply", u, F32(100.0) - F32(0.0))), "bf16")
    return {"prob": prob, "x": x}, [o0, o1]


@fixture
def quantize_mx_p128(rng):
    a = cast(randn(rng, 128, 8, scale=50.0), "bf16")
    q, s = quantize_mx(value(a, "bf16"), "f8e4m3fn", 8)
    return {"a": a}, [q, s[0:4], s[32:36], s[64:68], s[96:100]]


@fixture
def nc_matmul_mx_accumulate(rng):
    sc = finite_codes(rng, (128, 4, 4), "f8e4m3fn")
    vc = finite_codes(rng, (128, 8, 4), "f8e4m3fn")
    st, mv = pack8(sc), pack8(vc)
    ss = rng.integers(120, 132, size=(100, 4)).astype(np.uint8)
    vs = rng.integers(120, 132, size=(100, 8)).astype(np.uint8)
    S, V = lanes_fp8(st, "f8e4m3fn"), lanes_fp8(mv, "f8e4m3fn")
    first = matmul_mx(S, ss, V, vs, 128)
    # accumulate=true runs the same loop starting from dst; then into a bf16 destination (rounded once).
    acc = first.copy()
    with np.errstate(all="ignore"):
        for k in range(128):
            sf = np.exp2(ss[scale_row(k)].astype(F64) - 127)
            vf = np.exp2(vs[scale_row(k)].astype(F64) - 127)
            for q in range(4):
                acc = acc + ((np.outer(S[k, :, q], V[k, :, q]) * sf[:, None]) * vf[None, :]).astype(F32)
    return {"st": st, "mv": mv, "ss": ss, "vs": vs}, [acc, cast(first, "bf16")]


@fixture
def nc_matmul_wide_psum(rng):
    s = cast(randn(rng, 32, 8), "bf16")
    m = cast(randn(rng, 32, 1024), "bf16")
    return {"s": s, "m": m}, [matmul(value(s, "bf16"), value(m, "bf16"))]


@fixture
def trn2_pipeline(rng):
    a = randn(rng, 128, 16)
    w = cast(randn(rng, 128, 32), "bf16")
    r = matmul(value(w, "bf16"), value(cast(a, "bf16"), "bf16"))
    o0 = ts(r, "multiply", F32(0.5), "add", F32(1.0))
    o1 = act("exp", alu("multiply", a, F32(-0.5)))
    return {"a": a, "w": w}, [o0, o1]


@fixture
def dma_sbuf_inout_internal(rng):
    x = randn(rng, 16, 8)
    a = randn(rng, 16, 8)
    sb = cast(x, "bf16")  # SBUF -> SBUF copy with a cast, partitions 0..15 -> 80..95
    scratch = alu("add", x, a)  # .hbm scratch: x copied, a accumulated, read back
    inout = alu("add", alu("add", a, x), a)  # the inout argument gains x then a (its input value is a)
    return {"x": x, "a": a, "io": a}, [inout, sb, scratch]  # outputs in declaration order: io, sb, back



def nan_encode(bits, dt):
    """numerics.md 'NaN codes written' for f32 NaNs with payloads."""
    b = np.asarray(bits, np.uint32)
    sign16 = ((b >> 16) & 0x8000).astype(np.uint32)
    man = b & 0x7FFFFF
    if dt == "bf16":
        return ((b >> 16) | 0x0040).astype(np.uint16)
    if dt == "f16":  # the half crate: quiet bit set when the payload is nonzero, top payload bits kept
        return (sign16 | 0x7C00 | np.where(man != 0, 0x0200, 0) | (man >> 13)).astype(np.uint16).view(np.float16)
    if dt == "tf32":
        return ((b | 0x00400000) & ~np.uint32(0x1FFF)).view(F32)
    sign8 = ((b >> 24) & 0x80).astype(np.uint8)
    code = {"f8e4m3": 0x7C, "f8e4m3fn": 0x7F, "f8e5m2": 0x7E}
    if dt == "e8m0":
        return np.full(b.shape, 0xFF, np.uint8)
    return (sign8 | code[dt]).astype(np.uint8)


# Quiet NaNs only: `nkic exec` reads f32 inputs by value, which quiets signaling NaNs before the program runs.
NAN_BITS = [0x7FC12345, 0xFFC12345, 0x7FC00001, 0xFFC00000, 0x7FFFFFFF, 0xFFC00100, 0x7FE00000, 0x7FC00000]


@fixture
def nan_payload_encode(rng):
    x = bits_f32(np.array([NAN_BITS], np.uint32))
    outs = [nan_encode(x.view(np.uint32), dt) for dt in ("bf16", "f16", "tf32", "f8e4m3", "f8e4m3fn", "f8e5m2", "e8m0")]
    outs += [nan_encode(x.view(np.uint32), "bf16"), nan_encode(x.view(np.uint32), "f16")]  # DMA casts
    return {"x": x}, outs


@fixture
def e8m0_encode(rng):
    y = f32([[1.5, 0.75, 1.4999999, 0.0, -0.0, -2.0, 1e-40, 2.0**-127, 2.0**-128, 1.5 * 2.0**127, 3e38, np.inf,
              5.0, 6.0, 7.0, np.nan]])
    ref = cast(y, "e8m0")
    return {"y": y}, [ref, ref]



@fixture
def int_through_f32(rng):
    xi = rng.integers(2**27, 2**28, size=(32, 8)).astype(np.int32)
    # tensor_partition_reduce add on int32 is an f32 fold (only tensor_tensor/tensor_scalar are exact on GpSimd).
    acc = value(xi[0], "i32")
    for p in range(1, 32):
        acc = alu("add", acc, value(xi[p], "i32"))
    o0 = cast(acc, "i32")[None, :]
    # tensor_reduce add on int32 (vector): an f32 fold.
    o1 = cast(fold_rows("add", value(xi, "i32")), "i32")[:, None]
    # iota into f32 beyond 2^24 rounds to nearest even.
    o2 = f32(iota_values(1, [(1, 8)], 16777215, 0).astype(F64))
    # range_select: idx = f32(range_start + i) rounds; keep idx == 16777216.
    a = randn(rng, 1, 8)
    idx = f32(16777215 + np.arange(8, dtype=F64))[None, :]
    o3 = np.where(idx == F32(16777216.0), a, F32(-3.4028235e38)).astype(F32)
    # gpsimd tensor_tensor with an int32 and an f32 operand is not all-integer: computed in f32.
    fb = randn(rng, 32, 8)
    o4 = cast(alu("add", value(xi, "i32"), fb), "i32")
    return {"xi": xi, "a": a, "fb": fb}, [o0, o1, o2, o3, o4]


def fold_rows(op, rows):
    """Left fold x0 op x1 op ... along each row."""
    acc = f32(rows[:, 0]).copy()
    for i in range(1, rows.shape[1]):
        acc = alu(op, acc, rows[:, i])
    return acc



@fixture
def multi_queue_race_free(rng):
    a = randn(rng, 128, 16)
    w = randn(rng, 128, 8)
    out = np.empty((128, 16), F32)
    out[0:32] = alu("multiply", a[0:32], F32(2.0))  # vector
    out[32:64] = alu("add", a[32:64], F32(1.0))  # gpsimd
    out[64:96] = act("copy", alu("multiply", a[64:96], F32(-1.0)))  # scalar
    out[96:128] = ts(a[96:128], "square")  # vector again, after the others signalled
    mm = matmul(w, a)  # [8, 16] on the tensor engine from all four loaded quarters
    tot = alu("add", out[96:128], alu("add", out[64:96], alu("add", out[0:32], out[32:64])))
    return {"a": a, "w": w}, [out, mm, tot]



@fixture
def misc_patterns(rng):
    a = randn(rng, 4, 120)
    # A four-dim source [60,2][2,3][20,2][6,3] read row-major: element (i0,i1,i2,i3) at 60*i0 + 2*i1 + 20*i2 + 6*i3.
    src = a.reshape(4, 120)
    idx = np.array([[60 * i0 + 2 * i1 + 20 * i2 + 6 * i3 for i0 in range(2) for i1 in range(3) for i2 in range(2)
                     for i3 in range(3)]])
    o0 = src[:, idx[0]]
    o1 = iota_values(128, [], 7, -1)  # a pattern with no dims: one element per partition
    o2 = np.full((4, 8), 0.25, F32)  # memset into PSUM, read back by the scalar engine
    o3 = np.array([[41, 41]], np.int32)  # reg_load from SBUF, reg_alu, reg_store into SBUF
    return {"a": a}, [o0, o1[:, :1].reshape(128, 1), o2, o3]



@fixture
def dtype_variants(rng):
    a = randn(rng, 32, 16)
    ab = cast(a, "bf16")
    av = value(ab, "bf16")
    outs = []
    # (0, 1) tensor_scalar_reduce with a bf16 reduce_res; activation with a bf16 reduce_res.
    d = ts(a, "multiply", F32(0.5))
    outs.append(cast(row_reduce("add", d), "bf16")[:, None])
    outs.append(cast(row_reduce("add", act("exp", a)), "bf16")[:, None])
    # (2) select_reduce with an i16 predicate: 256 is nonzero although its low byte is 0.
    p16 = rng.choice(np.array([0, 1, 256, -1], np.int16), size=(32, 16))
    outs.append(np.where(p16 != 0, a, F32(-np.inf)).astype(F32))
    # (3) range_select on bf16 into bf16: on_false rounds to -inf in bf16.
    idx = f32(np.arange(16))[None, :]
    outs.append(cast(np.where((idx >= 3) & (idx < 11), av, F32(-3.4028235e38)), "bf16"))
    # (4) exponential from bf16 into f16.
    outs.append(cast(act("exp", alu("subtract", av, F32(1.0))), "f16"))
    # (5) tensor_tensor_scan with src1 in PSUM.
    b = randn(rng, 32, 16)
    r = np.zeros(32, F32)
    sc = np.empty((32, 16), F32)
    for i in range(16):
        r = alu("add", alu("multiply", a[:, i], r), b[:, i])
        sc[:, i] = r
    outs.append(sc)
    # (6) bn_stats of a stride-2 bf16 source (8 elements).
    outs.append(np.stack([bn_stats_row(row) for row in av[:, 0::2]]))
    # (7) nc_find_index8 on a bf16 source with f32 values.
    vals = av[:, [3, 3, 0, 15, 7, 7, 1, 2]].copy()
    vals[:, 6] = 1000.0
    outs.append(find_index8(av, vals, 0xFFFFFFFF).astype(np.uint32))
    # (8) nc_transpose on the tensor engine, bf16 128x128 (bits).
    t = cast(randn(rng, 128, 128), "bf16")
    outs.append(t.T.copy())
    # (9) dma_transpose SBUF -> SBUF, f32 [32, 16] -> [16, 32].
    outs.append(a.T.copy())
    # (10) dma_scatter accumulate into bf16 HBM with repeated rows: each add rounds to bf16.
    init = cast(randn(rng, 8, 16), "bf16")
    sidx = np.array([[1], [1], [6], [1]], np.int32)
    acc = value(init, "bf16").copy()
    for w in range(4):
        i = int(sidx[w, 0])
        acc[i] = value(cast(alu("add", acc[i], a[w]), "bf16"), "bf16")
    outs.append(cast(acc, "bf16"))
    return {"a": a, "ab": ab, "p16": p16, "b": b, "vals": vals, "t": t, "init": init, "sidx": sidx}, outs



@fixture
def activation_funcs_scale_bias_reduce(rng):
    x = act_input(rng, 32, 8)
    b = randn(rng, 32, 1, scale=0.5)
    t = alu("add", alu("multiply", x, F32(0.75)), b)
    outs = []
    for fn in ACT_FUNCS:
        d = act(fn, t)
        outs += [d, row_reduce("add", d)[:, None]]
    return {"x": x, "b": b}, outs



@fixture
def reg_wrap_edges(rng):
    imin = -(2**31)
    vals = [
        imin,  # INT_MIN div -1 wraps (isa.md is silent; add/sub/mul wrap, see GOLDEN_FINDINGS)
        0,  # INT_MIN rem -1
        imin,  # 0x12345679 shl by -1: (-1) mod 32 = 31 moves bit 0 to bit 31
        0x12345679,  # shr by 32: 32 mod 32 = 0
        -610839792 >> 1,  # sar by 33: 33 mod 32 = 1
        -1,  # stored after a wait on s >= r5 + 1 with r5 = -1: the threshold wraps to 0
        7,
    ]
    return {}, [np.array([vals], np.int64).astype(np.int32)]



@fixture
def quantize_mx_edges(rng):
    a = cast(randn(rng, 32, 12), "bf16")
    av = value(a, "bf16")
    # Group column j = 1 (elements 4..7): bf16 subnormals only, so e = floor(log2 amax) - 7 clamps to -127.
    sub = f32(rng.integers(1, 128, size=(32, 4)) * 2.0**-133) * f32(rng.choice([-1.0, 1.0], size=(32, 4)))
    a[:, 4:8] = cast(sub, "bf16")
    # Group column j = 2, partitions 8..15: amax is an exact power of two.
    a[8:16, 8:12] = cast(f32(rng.choice([0.25, -0.5, 1.0, 0.125], size=(8, 4))), "bf16")
    a[8, 8] = cast(f32([-4.0]), "bf16")[0]
    av = value(a, "bf16")
    q, s = quantize_mx(av, "f8e4m3fn", 8)
    return {"a": a}, [q, s]



@fixture
def iota_saturate(rng):
    v = f32(iota_values(1, [(100, 8)], -150, 0).astype(F64))
    w = f32(iota_values(1, [(1, 4)], 16842753, 0).astype(F64))
    return {}, [cast(v, "u8"), cast(v, "i8"), cast(w, "bf16")]



@fixture
def one_partition_edges(rng):
    s = randn(rng, 1, 8)
    m = randn(rng, 1, 16)
    x = randn(rng, 1, 24)
    outs = [
        matmul(s, m),  # K = 1: an outer product
        x.T.copy(),  # nc_transpose [1, 24] -> [24, 1] on the tensor engine
        x.copy(),  # tensor_partition_reduce over one partition
        x[:, sort_key_desc(x[0])[:8]],  # max8 on one partition
        act("tanh", alu("add", alu("multiply", x, F32(2.0)), F32(0.5))),  # activation on partition 96
        row_reduce("add", act("tanh", alu("add", alu("multiply", x, F32(2.0)), F32(0.5))))[:, None],
    ]
    return {"s": s, "m": m, "x": x}, outs



@fixture
def nc_matmul_mixed(rng):
    sb = cast(randn(rng, 32, 8), "bf16")
    m8 = cast(randn(rng, 32, 12, scale=4.0), "f8e5m2")
    sh = randn(rng, 32, 8).astype(np.float16)
    mb = cast(randn(rng, 32, 12), "bf16")
    o0 = matmul(value(sb, "bf16"), value(m8, "f8e5m2"))  # bf16 x f8e5m2
    o1 = matmul(sh.astype(F32), value(mb, "bf16"))  # f16 x bf16
    # Transpose mode from an fp8 stationary into f32: exact values. Moving is an identity with column 5 all zero
    # (an ordinary matmul column: zeros) and -0.0 off the diagonal of column 2 (still a single nonzero).
    s8 = cast(randn(rng, 16, 8, scale=3.0), "f8e4m3")
    eye = np.eye(16, dtype=F32)
    eye[5, 5] = 0.0
    eye[9, 2] = -0.0
    e8 = cast(eye, "f8e4m3")
    sv = value(s8, "f8e4m3")
    o2 = sv.T.copy()
    o2[:, 5] = matmul(sv, value(e8, "f8e4m3")[:, 5:6])[:, 0]
    return {"sb": sb, "m8": m8, "sh": sh, "mb": mb, "s8": s8, "e8": e8}, [o0, o1, o2]



DMA_SRC = ["f32", "bf16", "f16", "f8e4m3", "i16", "u8", "bool"]
DMA_DST = ["bf16", "f16", "tf32", "f8e5m2", "f8e4m3fn", "i32", "u16", "i8", "bool", "f32"]


@fixture
def dma_cast_matrix(rng):
    ins, outs = {}, []
    for k, sdt in enumerate(DMA_SRC):
        x = sweep_input(rng, sdt)
        ins[f"x{k}"] = x
        v = value(x, sdt)
        for ddt in DMA_DST:
            if ddt == sdt:
                continue
            outs.append(cast(v, ddt))
    # An SBUF bf16 destination accumulates in f32 and rounds to bf16 once per transfer.
    acc = cast(alu("add", value(cast(ins["x0"], "bf16"), "bf16"), ins["x0"]), "bf16")
    outs.append(acc)
    return ins, outs



@fixture
def reduce_cmd_reset(rng):
    a = randn(rng, 32, 8)
    # reset sets each accumulator to the identity of reduce_op and folds nothing in; idle reads it back unchanged.
    return {"a": a}, [
        np.full((32, 1), 1.0, F32),  # tensor_scalar_reduce reset with multiply, read by idle
        np.full((32, 1), np.inf, F32),  # reset with minimum
        np.full((32, 1), np.inf, F32),  # reset with maximum (-inf), read negated with reduce_res_negate
        np.zeros((32, 1), F32),  # activation reset with add, read by idle
        row_reduce("abs_min", act("copy", a))[:, None],  # activate2 reset then reduce abs_min from +inf
    ]



@fixture
def accumulator_readout(rng):
    a = randn(rng, 32, 8)
    # tensor_scalar_cumulative leaves its running value in the Vector accumulator: an idle read gives the last column.
    reg = np.zeros(32, F32)
    for i in range(8):
        reg = alu("add", alu("multiply", a[:, i], F32(2.0)), reg)
    o0 = reg[:, None]
    # tensor_scalar_reduce with a unary op0 ignores the given operand: |a|, summed from 0.
    d1 = alu("abs", a)
    o1 = d1
    o2 = row_reduce("add", d1)[:, None]
    # exponential with reduce_cmd=reduce continues from that sum; idle then reads it.
    e = act("exp", alu("subtract", a, F32(0.5)))
    o3 = alu("add", row_reduce("add", d1), row_reduce("add", e))[:, None]
    # tensor_scalar on the scalar engine with unary operators (trn3).
    o4 = ts(a, "abs", None, "square")
    return {"a": a}, [o0, o1, o2, o3, o4]



@fixture
def negative_offset_psum_accumulate(rng):
    a = randn(rng, 8, 16)
    s = randn(rng, 16, 4)
    m = randn(rng, 16, 8)
    # A register offset is signed: r1 = -2 moves the source two rows (128 bytes) back from row 4.
    o0 = a[2:6].copy()
    # accumulate=true onto PSUM written by memset adds onto what it holds.
    o1 = matmul(s, m, np.full((4, 8), 1.5, F32))
    return {"a": a, "s": s, "m": m}, [o0, o1]



@fixture
def activation_extremes(rng):
    x = f32([[np.inf, -np.inf, 100.0, -100.0, 1e30, -1e30, np.nan, 0.0, -0.0, 1e-30, -1e-30, 88.8]])
    t = alu("add", alu("multiply", x, F32(1.0)), F32(0.0))  # no bias means + 0.0: -0.0 becomes +0.0
    return {"x": x}, [act(fn, t) for fn in ACT_FUNCS]



@fixture
def memset_specials(rng):
    return {}, [
        cast(np.full((2, 4), np.inf, F32), "f8e4m3fn"),  # no infinity: native overflow gives NaN
        cast(np.full((2, 4), 1e10, F32), "f16"),  # overflows to inf
        cast(np.full((2, 4), bits_f32(0xFFC12345), F32), "bf16"),  # a NaN value: top payload bits, quiet bit set
        cast(np.full((2, 4), 3e-39, F32), "bf16"),  # subnormal
        cast(np.full((2, 4), -300.0, F32), "f8e4m3"),  # overflows to -inf (0xF8)
        np.full((2, 4), False),  # bool from 0
        cast(np.full((2, 4), 1.0 + 2.0**-11, F32), "f16"),  # a tie rounds to even
    ]



@fixture
def tensor_scalar_bitwise_reverse(rng):
    s = rng.integers(-40, 40, size=(4, 16)).astype(np.int32)
    u = ext32(s)
    return {"s": s}, [
        bitwise("left_shift", np.uint32(4), u).astype(np.uint32).view(np.int32),  # 4 << (s mod 32)
        bitwise("right_shift", np.uint32(0x80000000), u).astype(np.uint32).view(np.int32),  # logical
        bitwise("bitwise_and", bitwise("left_shift", np.uint32(1), u), np.uint32(0xFF00)).astype(np.uint32).view(np.int32),
    ]


@fixture
def core_barrier_exchange(rng):
    # Two cores: `out` is `a` (each core its half), `swapped` the halves
    # exchanged through `out` after the barrier.
    a = randn(rng, 128, 512)
    return {"a": a}, [a.copy(), np.concatenate([a[:, 256:], a[:, :256]], axis=1)]


@fixture
def sendrecv_exchange(rng):
    # Two cores swap their halves of `a` with sendrecv.
    a = randn(rng, 128, 512)
    return {"a": a}, [a.copy(), np.concatenate([a[:, 256:], a[:, :256]], axis=1)]


@fixture
def constant_data(rng):
    # The constants are the bytes of the fixture's own `.data` lines.
    w = nkasm_data("constant_data", "w", "<f4", (4, 8))
    h = nkasm_data("constant_data", "h", "<u2", (4, 8))
    x = randn(rng, 4, 8)
    over = w.copy()
    over[:2] = x[:2]
    return {"x": x}, [w, value(h, "bf16"), alu("add", x, w), over]


# ================================================================= driver


def npy_bytes(a):
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def main(argv):
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")] or sorted(FIXTURES)
    problems = []
    for name in names:
        if name not in FIXTURES:
            problems.append(f"{name}: no such fixture in gen.py")
            continue
        d = HERE
        if not os.path.exists(os.path.join(d, name + ".nkasm")):
            problems.append(f"{name}: no {name}.nkasm")
            continue
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        inputs, outputs = FIXTURES[name](rng)
        files = {f"{name}.in.{arg}.npy": arr for arg, arr in inputs.items()}
        files.update({f"{name}.ref.out{i}.npy": arr for i, arr in enumerate(outputs)})
        for fname, arr in files.items():
            data = npy_bytes(arr)
            path = os.path.join(d, fname)
            if check:
                old = open(path, "rb").read() if os.path.exists(path) else None
                if old != data:
                    problems.append(f"{fname} would change")
            else:
                with open(path, "wb") as f:
                    f.write(data)
    for fname in sorted(os.listdir(HERE)):
        if fname.endswith(".nkasm") and fname[:-6] not in FIXTURES:
            problems.append(f"{fname}: no generator function in gen.py")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
