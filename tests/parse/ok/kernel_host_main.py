import sys

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def negate(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=-1.0)
    nisa.dma_copy(dst=out, src=t)
    return out


def check(shape=(128, 512), dtype=np.float32, seed: int = 0) -> bool:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    try:
        got = nki.simulate(negate)(x)
    except AssertionError as err:
        print(f"kernel rejected the input: {err}", file=sys.stderr)
        return False
    except (ValueError, TypeError):
        raise
    else:
        print("simulated", got.shape)
    finally:
        print("done")
    expected = -x
    ok = np.allclose(got, expected, atol=1e-6)
    print(f"max abs error: {np.max(np.abs(got - expected)):.3e}")
    return ok


if __name__ == "__main__":
    shapes = [(128, 512), (128, 1024)]
    results = {s: check(s) for s in shapes}
    failed = [s for s, ok in results.items() if not ok]
    if failed:
        print("failed shapes:", *failed, sep="\n  ")
        sys.exit(1)
    print("all", len(results), "shapes passed")
