#!/usr/bin/env python3
"""Runs nkic over a local checkout of AWS's nki-library (issue 13 item 6).

    python3 tools/nkilib_corpus.py PATH/TO/nki-library [--nkic target/debug/nkic] [-v]

For each case below (a library kernel with argument shapes, dtypes and
compile-time arguments written for this project from the parameter sets of
the library's published integration tests, `test/integration/nkilib/...`),
it runs `nkic check` (specialize), then `nkic run` (compile and simulate),
and, when NumPy is importable and the case has a reference, compares the
outputs with it. It prints one line per case and the counts
`specialize/run/match out of N`. Nothing of the library is copied or
vendored: the path is given on the command line. Not run by CI.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

SRC = "src/nkilib_src"

# name, kernel file (under src/nkilib_src), kernel function, args, consts,
# grid, target, reference (a function of the inputs dict -> list of outputs,
# or None).
CASES = [
    dict(name="cumsum_1x256_f32", file="nkilib/core/cumsum/cumsum.py", kernel="cumsum",
         args=["x=float32[1,256]"], ref="cumsum"),
    dict(name="cumsum_64x4x1024_bf16", file="nkilib/core/cumsum/cumsum.py", kernel="cumsum",
         args=["x=bfloat16[64,4,1024]"], ref=None),
    dict(name="cumsum_128x2048_f32", file="nkilib/core/cumsum/cumsum.py", kernel="cumsum",
         args=["x=float32[128,2048]"], ref="cumsum"),
    dict(name="rope_64_1_1_16", file="nkilib/core/embeddings/rope.py", kernel="RoPE",
         args=["x_in=float32[64,1,1,16]", "cos=float32[32,1,16]", "sin=float32[32,1,16]"]),
    dict(name="rope_128_8_8_128", file="nkilib/core/embeddings/rope.py", kernel="RoPE",
         args=["x_in=bfloat16[128,8,8,128]", "cos=bfloat16[64,8,128]", "sin=bfloat16[64,8,128]"]),
    dict(name="rmsnorm_quant_row_lnc2", file="nkilib/core/rmsnorm/rmsnorm_quant.py",
         kernel="rmsnorm_quant_kernel",
         args=["hidden=bfloat16[1,2,16384]", "ln_w=bfloat16[1,16384]"],
         consts=["kargs=nkilib.core.rmsnorm.rmsnorm_quant.RmsNormQuantKernelArgs("
                 "quantization_type=nkilib.core.utils.common_types.QuantizationType.ROW, "
                 "lower_bound=0.0, norm_type=nkilib.core.utils.common_types.NormType.RMS_NORM, eps=1e-6)"],
         grid="2", target="trn2"),
    dict(name="rmsnorm_quant_only_lnc2", file="nkilib/core/rmsnorm/rmsnorm_quant.py",
         kernel="rmsnorm_quant_kernel",
         args=["hidden=bfloat16[1,2,16384]", "ln_w=bfloat16[1,16384]"],
         consts=["kargs=nkilib.core.rmsnorm.rmsnorm_quant.RmsNormQuantKernelArgs("
                 "quantization_type=nkilib.core.utils.common_types.QuantizationType.ROW, "
                 "lower_bound=0.5, norm_type=nkilib.core.utils.common_types.NormType.NO_NORM, eps=1e-6)"],
         grid="2", target="trn2"),
    dict(name="cascaded_max_1x1x32000", file="nkilib/core/max/cascaded_max.py",
         kernel="cascaded_max", args=["input_tensor=float32[1,1,32000]"], target="trn2"),
    dict(name="cross_entropy_fwd_lnc2", file="nkilib/experimental/loss/cross_entropy.py",
         kernel="cross_entropy_forward",
         args=["logits_hbm=bfloat16[64,32768]", "targets_hbm=int32[64]"],
         grid="2", target="trn2"),
    dict(name="conv1d_small", file="nkilib/experimental/conv/conv1d.py", kernel="conv1d",
         args=["x_in=bfloat16[1,128,256]", "filters=bfloat16[128,128,3]"],
         consts=["padding=(1, 1)"]),
]


def reference(name, inputs):
    """The expected outputs of reference `name` for `inputs` (NumPy)."""
    import numpy as np

    if name == "cumsum":
        x = inputs["x"].astype(np.float64)
        return [np.cumsum(x, axis=-1)]
    raise KeyError(name)


def make_inputs(case, out_dir):
    """Random float32 inputs for a case with a reference, saved as .npy
    files; returns (inputs, the --input flags)."""
    import numpy as np

    rng = np.random.default_rng(0)
    inputs, flags = {}, []
    for a in case.get("args", []):
        name, spec = a.split("=", 1)
        dtype, shape = spec.rstrip("]").split("[")
        if dtype != "float32":
            raise ValueError("references are written for float32 inputs only")
        x = rng.standard_normal([int(d) for d in shape.split(",")]).astype(np.float32)
        path = os.path.join(out_dir, f"in_{name}.npy")
        np.save(path, x)
        inputs[name] = x
        flags += ["--input", f"{name}={path}"]
    return inputs, flags


def compare(case, inputs, out_dir):
    """True when every output matches the reference (rtol=atol=1e-3 for
    float32)."""
    import numpy as np

    expected = reference(case["ref"], inputs)
    for i, e in enumerate(expected):
        got = np.load(os.path.join(out_dir, f"out{i}.npy")).astype(np.float64)
        if got.shape != e.shape or not np.allclose(got, e, rtol=1e-3, atol=1e-3):
            return False
    return True


def nkic_cmd(nkic, sub, lib, case):
    cmd = [nkic, sub, os.path.join(lib, SRC, case["file"]), "--kernel", case["kernel"],
           "--path", os.path.join(lib, SRC)]
    for a in case.get("args", []):
        cmd += ["--arg", a]
    for c in case.get("consts", []):
        cmd += ["--const", c]
    if case.get("grid"):
        cmd += ["--grid", case["grid"]]
    if case.get("target"):
        cmd += ["--target", case["target"]]
    return cmd


def first_error(text):
    for line in text.splitlines():
        if "Error:" in line:
            return line.strip()[:160]
    return text.strip().splitlines()[-1][:160] if text.strip() else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("library", help="a checkout of github.com/aws-neuron/nki-library")
    ap.add_argument("--nkic", default="target/debug/nkic")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    try:
        import numpy  # noqa: F401
        have_numpy = True
    except ImportError:
        have_numpy = False
    n_spec = n_run = n_match = n_ref = 0
    for case in CASES:
        t0 = time.monotonic()
        try:
            chk = subprocess.run(nkic_cmd(opts.nkic, "check", opts.library, case),
                                 capture_output=True, text=True, timeout=opts.timeout)
        except subprocess.TimeoutExpired:
            print(f"{case['name']:28} TIMEOUT in check")
            continue
        t_check = time.monotonic() - t0
        if chk.returncode != 0:
            print(f"{case['name']:28} specialize FAIL ({t_check:.1f}s): {first_error(chk.stderr)}")
            continue
        n_spec += 1
        with tempfile.TemporaryDirectory() as out:
            checked = bool(case.get("ref")) and have_numpy
            inputs, flags = make_inputs(case, out) if checked else ({}, [])
            t0 = time.monotonic()
            try:
                run = subprocess.run(nkic_cmd(opts.nkic, "run", opts.library, case) + flags + ["--out", out],
                                     capture_output=True, text=True, timeout=opts.timeout)
            except subprocess.TimeoutExpired:
                print(f"{case['name']:28} specialize ok ({t_check:.1f}s), run TIMEOUT")
                continue
            t_run = time.monotonic() - t0
            if run.returncode != 0:
                print(f"{case['name']:28} specialize ok ({t_check:.1f}s), run FAIL ({t_run:.1f}s): "
                      f"{first_error(run.stderr)}")
                continue
            n_run += 1
            verdict = "no reference"
            if checked:
                n_ref += 1
                ok = compare(case, inputs, out)
                n_match += ok
                verdict = "matches the reference" if ok else "DIFFERS from the reference"
            print(f"{case['name']:28} specialize ok ({t_check:.1f}s), run ok ({t_run:.1f}s), {verdict}")
            if opts.verbose:
                print(run.stdout)
    total = len(CASES)
    print(f"\n{n_spec}/{total} specialize, {n_run}/{total} run, {n_match}/{n_ref} match"
          + ("" if have_numpy else " (NumPy not available: no comparisons)"))


if __name__ == "__main__":
    sys.exit(main())
