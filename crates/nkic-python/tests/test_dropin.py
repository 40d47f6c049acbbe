"""The drop-in namespaces: how they are activated (`NKI_SIMULATOR=nkic`,
`pytest -p nkic.pytest`, `nkic.install()`), that nothing is shadowed
otherwise, the legacy `neuronxcc.nki` entry points and host-side names."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nkic

import elementwise as k
import legacy

# A script as a kernel author writes it: no mention of nkic.
SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import nki
    import nki.isa as nisa
    import nki.language as nl


    @nki.jit
    def double(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out, src=r)
        return out


    a = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    out = double(a)
    assert (out == 2 * a).all(), out
    print("ran on", type(double).__module__)
    """
)


def _run(args, cwd, env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("NKI_SIMULATOR", "PYTHONPATH")}
    env.update(env_changes)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_nki_simulator_env_runs_an_unmodified_script(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT)
    done = _run(["script.py"], tmp_path, {"NKI_SIMULATOR": "nkic"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran on nkic._kernel\n"


def test_nothing_is_shadowed_unless_asked(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT)
    done = _run(["script.py"], tmp_path, {})
    assert done.returncode != 0
    assert "ModuleNotFoundError: No module named 'nki'" in done.stderr
    probe = "import importlib.util, nkic; print(importlib.util.find_spec('nki'), nkic.installed())"
    done = _run(["-c", probe], tmp_path, {})
    assert done.stdout == "None False\n", done.stderr


def test_pytest_plugin_activates_the_namespaces(tmp_path):
    test = SCRIPT.replace("\na = np.arange", "\ndef test_double():\n    a = np.arange")
    test = test.replace("\nout = double(a)", "\n    out = double(a)")
    test = test.replace("\nassert (out", "\n    assert (out").replace("\nprint(", "\n    print(")
    # A kernel named like a test is not collected as one (NKI's jit objects
    # are not functions to pytest either).
    test += "\n\n@nki.jit\ndef test_kernel_named_like_a_test(in_tensor):\n    return in_tensor\n"
    (tmp_path / "test_script.py").write_text(test)
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "nkic.pytest", "test_script.py"]
    done = _run(args, tmp_path, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_install_and_uninstall():
    assert nkic.installed()  # conftest.py installed them
    import nki
    import neuronxcc.nki as legacy_nki

    assert nki is nkic.nki and legacy_nki is nkic.nki
    nkic.uninstall()
    try:
        assert not nkic.installed()
        with pytest.raises(ModuleNotFoundError):
            __import__("nki.language")
    finally:
        nkic.install()
    assert nkic.installed()


def test_legacy_entry_points(rng, tmp_path):
    import neuronxcc.nki as nki

    a = rng.standard_normal((128, 64), dtype=np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(legacy.legacy_exp, a), np.exp(a), rtol=1e-5)
    np.testing.assert_allclose(nki.baremetal(legacy.legacy_exp.fn)(a), np.exp(a), rtol=1e-5)
    np.testing.assert_array_equal(nki.simulate(k.add)(a, a), a + a)
    np.testing.assert_array_equal(nki.simulate(k.add, a, a), a + a)

    bench = nki.benchmark(warmup=2, iters=10)(k.add.fn)
    np.testing.assert_array_equal(bench(a, a), a + a)
    expected_us = nkic.compile(k.add, a, a).report["simulated_ns"] / 1000.0
    assert expected_us > 0
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) == expected_us
    assert bench.benchmark_result.nc_latency.get_latency_percentile(99) == expected_us

    profiled = nki.profile(working_directory=str(tmp_path))(k.add.fn)
    np.testing.assert_array_equal(profiled(a, a), a + a)
    assert json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert (tmp_path / "timeline.svg").read_text().startswith("<svg")


def test_host_code_names():
    import nki.isa as nisa
    import nki.language as nl

    assert nl.tile_size.pmax == 128
    assert nl.tile_size.psum_fmax == 512
    assert nl.fp32.min == float(np.finfo(np.float32).min)
    assert nl.float32 is np.float32 or np.dtype(nl.float32) == np.float32
    assert nisa.reduce_cmd.load_reduce != nisa.reduce_cmd.idle
