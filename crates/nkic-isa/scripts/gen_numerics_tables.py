#!/usr/bin/env python3
"""Writes the reference tables that pin nkic-isa's numerics to ml_dtypes/NumPy.

Usage (from anywhere; needs `pip install numpy ml_dtypes`):

    python3 crates/nkic-isa/scripts/gen_numerics_tables.py

The tables go to `crates/nkic-isa/tests/data/numerics/` as raw little-endian
binary files, described in the README.md written next to them. The output is
deterministic for given NumPy and ml_dtypes versions (a fixed seed drives
NumPy's PCG64 generator), so rerunning the script reproduces the committed
files byte for byte. `crates/nkic-isa/tests/numerics.rs` reads them; no Python
is needed at test time.

What is checked where:
* decode_*.bin: every code of bfloat16, float16, the four 8-bit float formats
  and fp4 e2m1fn, decoded to float32 by ml_dtypes/NumPy.
* inputs.f32: 1,000,000 float32 inputs (edge cases first, then random bit
  patterns and random normal values at many scales), stored once.
* encode_*.bin: those inputs encoded by ml_dtypes/NumPy `astype` (float16 and
  the narrow formats), one code per input (fp4: two codes per byte, the even
  input in the low nibble).
* encode_bfloat16.flags / encode_tfloat32.flags: one bit per input (LSB first
  in each byte). Both formats keep the top bits of the float32 pattern, so the
  encoded value is `(bits >> k) + flag` for every non-NaN input (k = 16 for
  bfloat16, 13 for tfloat32 with the result shifted back); storing the flag
  instead of the code keeps the tables small. bfloat16 flags come from
  ml_dtypes; tfloat32 (absent from ml_dtypes) is computed here by picking the
  nearer of the two candidates in float64 arithmetic, ties to even.
* int_inputs.f32 / int_*.bin: float32 -> integer conversions under nkic's own
  rule (round half to even, saturate to the type's range, NaN -> 0), computed
  in float64 with NumPy on a separate set of inputs concentrated where the
  rule matters (ties, range bounds, specials).
"""

import pathlib
import sys

import ml_dtypes
import numpy as np

N_INPUTS = 1_000_000
N_INT_INPUTS = 32_768
SEED = 20261130

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "numerics"

# name -> (ml_dtypes type, storage dtype of one code)
NARROW = {
    "float8_e4m3": ml_dtypes.float8_e4m3,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
}

INTS = {
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
}


def f32_bits(xs):
    return np.asarray(xs, dtype=np.float32).view(np.uint32)


def bits_f32(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def finite_values(decoded):
    """Sorted distinct finite values of a decoded code table (both signs)."""
    v = decoded[np.isfinite(decoded)].astype(np.float64)
    return np.unique(v)


def neighbours(values_f32):
    """The float32 values one ulp below and above each value."""
    v = np.asarray(values_f32, dtype=np.float32)
    return np.concatenate(
        [
            np.nextafter(v, np.float32(-np.inf)),
            np.nextafter(v, np.float32(np.inf)),
        ]
    )


def around_midpoints(sorted_values):
    """Exact midpoints of adjacent values, and their float32 neighbours."""
    mids = ((sorted_values[:-1] + sorted_values[1:]) / 2).astype(np.float32)
    return np.concatenate([mids, neighbours(mids)])


def overflow_edges(max_finite, ulp_at_max):
    """Values around a format's largest finite value and overflow threshold."""
    pts = np.array(
        [
            max_finite,
            max_finite + ulp_at_max / 2,
            max_finite + ulp_at_max,
            max_finite + ulp_at_max * 1.5,
            max_finite * 2,
            max_finite * 1e3,
        ],
        dtype=np.float64,
    )
    pts = pts[pts <= np.finfo(np.float32).max].astype(np.float32)
    both = np.concatenate([pts, neighbours(pts)])
    return np.concatenate([both, -both])


def edge_cases(decode_tables):
    parts = []
    specials = [
        0x00000000, 0x80000000, 0x7F800000, 0xFF800000,
        0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF,
        0x7FA00000, 0x7F801000, 0xFF802000,
        0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x00400001,
        0x003FFFFF, 0x00600000, 0x00600001, 0x005FFFFF, 0x00200000, 0x00800000,
        0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7FF000, 0x7F7FEFFF, 0x7F7F8000,
        0x7F7F7FFF, 0x7F7F8001,
    ]
    parts.append(bits_f32(specials))
    # Every representable value of every narrow format (and fp4), its float32
    # neighbours, the midpoints between neighbouring values (ties) and theirs,
    # plus the overflow thresholds.
    for name, table in decode_tables.items():
        if name in ("float16", "bfloat16"):
            continue
        vals = finite_values(table)
        v32 = vals.astype(np.float32)
        parts += [v32, neighbours(v32), around_midpoints(vals)]
        pos = vals[vals > 0]
        if name != "float8_e8m0fnu":
            parts.append(overflow_edges(pos[-1], pos[-1] - pos[-2]))
        else:
            # e8m0 rounds linearly between powers of two with ties up: the
            # mantissa 0x400000 of every exponent is its tie.
            exps = np.arange(0, 255, dtype=np.uint32)
            ties = (exps << 23) | 0x400000
            parts += [bits_f32(t) for t in (ties, ties - 1, ties + 1)]
            parts.append(overflow_edges(pos[-1], pos[-1]))
    # float16 and bfloat16: every value and every tie between neighbours.
    for name in ("float16", "bfloat16"):
        vals = finite_values(decode_tables[name])
        parts += [vals.astype(np.float32), around_midpoints(vals)]
        pos = vals[vals > 0]
        parts.append(overflow_edges(pos[-1], pos[-1] - pos[-2]))
    return np.concatenate(parts)


def random_inputs(rng, n):
    n_bits = n // 2
    bits = rng.integers(0, 2**32, size=n_bits, dtype=np.uint64).astype(np.uint32)
    # Normal values at many scales: each format's subnormal range, around one,
    # and each format's overflow region.
    scales = np.array(
        [2.0**-140, 2.0**-128, 2.0**-127, 2.0**-126, 2.0**-120, 2.0**-26,
         2.0**-24, 2.0**-17, 2.0**-14, 2.0**-10, 2.0**-7, 2.0**-2, 0.5, 1.0,
         3.0, 10.0, 100.0, 240.0, 448.0, 1e3, 6e4, 7e4, 1e6, 1e10, 1e20, 1e30,
         2.0**127, 3e38],
        dtype=np.float64,
    )
    n_normal = n - n_bits
    which = rng.integers(0, len(scales), size=n_normal)
    normal = rng.standard_normal(n_normal) * scales[which]
    with np.errstate(over="ignore"):
        normal = normal.astype(np.float32)
    return np.concatenate([bits_f32(bits), normal])


def tf32_flags(x):
    """1 where RNE to tfloat32 rounds the magnitude up, decided in float64."""
    bits = f32_bits(x).astype(np.uint64)
    mag = bits & 0x7FFFFFFF
    lo = mag & ~np.uint64(0x1FFF)
    hi = lo + 0x2000

    def value(m):
        # Decodes magnitude bits; exponent 255 counts as 2^128 (the value the
        # IEEE overflow rule rounds against), subnormals as exact subnormals.
        e = (m >> 23).astype(np.int64)
        f = (m & 0x7FFFFF).astype(np.float64)
        normal = np.ldexp(1.0 + f / 2**23, e - 127)
        sub = np.ldexp(f, -149)
        return np.where(e == 0, sub, normal)

    xv = value(mag)
    d_lo = xv - value(lo)
    d_hi = value(hi) - xv
    odd = ((lo >> 13) & 1) == 1
    up = (d_hi < d_lo) | ((d_hi == d_lo) & odd)
    nan = np.isnan(x)
    up &= ~nan
    return up.astype(np.uint8)


def pack_flags(flags):
    return np.packbits(flags.astype(np.uint8), bitorder="little")


def int_inputs(rng):
    parts = []
    for t in INTS.values():
        info = np.iinfo(t)
        for b in (float(info.min), float(info.max)):
            pts = np.array([b, b - 0.5, b + 0.5, b - 1, b + 1, b - 1.5, b + 1.5], dtype=np.float64)
            p32 = pts.astype(np.float32)
            parts += [p32, neighbours(p32)]
    ks = np.arange(-300, 300, dtype=np.float64)
    ties = (ks + 0.5).astype(np.float32)
    parts += [ties, neighbours(ties), ks.astype(np.float32)]
    parts.append(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 0.5, -0.5,
                           2.0**24 + 2, 2.0**31, -2.0**31, 2.0**32, 1e30, -1e30], dtype=np.float32))
    fixed = np.concatenate(parts)
    rest = N_INT_INPUTS - len(fixed)
    wide = rng.uniform(-5e9, 5e9, size=rest // 4)
    mid = rng.uniform(-70000, 70000, size=rest // 4)
    small = rng.uniform(-300, 300, size=rest // 4)
    tiny = rng.uniform(-2, 2, size=rest - 3 * (rest // 4))
    out = np.concatenate([fixed, np.concatenate([wide, mid, small, tiny]).astype(np.float32)])
    assert len(out) == N_INT_INPUTS, len(out)
    return out


def int_rule(x, t):
    info = np.iinfo(t)
    v = np.rint(x.astype(np.float64))
    v = np.where(np.isnan(v), 0.0, v)
    v = np.clip(v, float(info.min), float(info.max))
    return v.astype(t)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    written = {}

    def write(name, arr):
        data = np.ascontiguousarray(arr).tobytes()
        (OUT / name).write_bytes(data)
        written[name] = len(data)

    # Decode tables.
    decode_tables = {
        "bfloat16": np.arange(2**16, dtype=np.uint16).view(ml_dtypes.bfloat16).astype(np.float32),
        "float16": np.arange(2**16, dtype=np.uint16).view(np.float16).astype(np.float32),
    }
    for name, t in NARROW.items():
        decode_tables[name] = np.arange(256, dtype=np.uint8).view(t).astype(np.float32)
    decode_tables["float4_e2m1fn"] = (
        np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    )
    for name, table in decode_tables.items():
        write(f"decode_{name}.bin", table.view("<u4"))

    # The shared float32 inputs.
    edges = edge_cases(decode_tables)
    assert len(edges) < N_INPUTS, len(edges)
    x = np.concatenate([edges, random_inputs(rng, N_INPUTS - len(edges))]).astype(np.float32)
    assert len(x) == N_INPUTS
    write("inputs.f32", x.view("<u4"))

    with np.errstate(over="ignore", invalid="ignore"):
        write("encode_float16.bin", x.astype(np.float16).view("<u2"))
        for name, t in NARROW.items():
            write(f"encode_{name}.bin", x.astype(t).view(np.uint8))
        fp4 = x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
        write("encode_float4_e2m1fn.bin", (fp4[0::2] | (fp4[1::2] << 4)).astype(np.uint8))

        bits = f32_bits(x)
        nan = np.isnan(x)
        bf = x.astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.int64)
        bf_flag = bf - (bits >> 16).astype(np.int64)
        bf_flag[nan] = 0
        assert np.all((bf_flag == 0) | (bf_flag == 1)), "bfloat16 is not truncate-plus-flag"
        write("encode_bfloat16.flags", pack_flags(bf_flag))
        write("encode_tfloat32.flags", pack_flags(tf32_flags(x)))

        xi = int_inputs(rng)
        write("int_inputs.f32", xi.view("<u4"))
        for name, t in INTS.items():
            write(f"int_{name}.bin", int_rule(xi, t).view(np.dtype(t).newbyteorder("<")))

    total = sum(written.values())
    readme = [
        "# numerics reference tables",
        "",
        "Generated by `crates/nkic-isa/scripts/gen_numerics_tables.py`; do not edit by hand.",
        f"NumPy {np.__version__}, ml_dtypes {ml_dtypes.__version__}, seed {SEED}.",
        "All files are raw little-endian arrays; see the script's docstring for what each holds.",
        f"The first {len(edges)} of the {N_INPUTS} values in `inputs.f32` are edge cases;",
        "the rest are random bit patterns and random normal values at many scales.",
        "",
        "| file | bytes |",
        "| --- | --- |",
    ]
    readme += [f"| `{name}` | {size} |" for name, size in sorted(written.items())]
    readme += ["", f"Total: {total} bytes."]
    (OUT / "README.md").write_text("\n".join(readme) + "\n")
    print(f"wrote {len(written)} tables, {total} bytes, to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
