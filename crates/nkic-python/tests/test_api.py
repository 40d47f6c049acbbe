"""The nkic Python API: simulate, jit, compile, check, profile, the cache,
argument kinds, in-place updates, exceptions, LNC=2 and both dialects."""

import json
import os
import subprocess
import sys
import threading
import time
import warnings

import ml_dtypes
import numpy as np
import pytest

import nkic

import deep
import elementwise as k
import kconfig
import legacy


def test_simulate_matches_numpy(rng):
    a = rng.standard_normal((256, 512), dtype=np.float32)
    b = rng.standard_normal((256, 512), dtype=np.float32)
    out = nkic.simulate(k.add)(a, b)
    assert isinstance(out, np.ndarray)
    assert out.dtype == np.float32 and out.shape == (256, 512)
    np.testing.assert_array_equal(out, a + b)


def test_jit_wrapper_called_directly_and_through_simulate(rng):
    a = rng.standard_normal((128, 64), dtype=np.float32)
    b = rng.standard_normal((128, 64), dtype=np.float32)
    # Under the drop-in namespaces `@nki.jit` is an nkic kernel already.
    assert isinstance(k.add, nkic.Kernel)
    np.testing.assert_array_equal(k.add(a, b), a + b)
    np.testing.assert_array_equal(nkic.simulate(k.add.fn)(a, b), a + b)

    @nkic.jit
    def local(x):  # a kernel nkic cannot find at module level
        return x

    with pytest.raises(nkic.CompileError):
        local(a)


def test_keyword_arguments_bind_like_python(rng):
    a = rng.standard_normal((128, 64), dtype=np.float32)
    b = rng.standard_normal((128, 64), dtype=np.float32)
    np.testing.assert_array_equal(k.add(b=b, a=a), a + b)
    with pytest.raises(TypeError, match="kernel `add`"):
        k.add(a)


def test_bfloat16_inputs_and_outputs(rng):
    a = rng.standard_normal((128, 256), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((128, 256), dtype=np.float32).astype(ml_dtypes.bfloat16)
    out = k.add(a, b)
    assert out.dtype == ml_dtypes.bfloat16
    expected = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


def test_precise_fp_off_holds_low_precision_as_float32(rng, monkeypatch):
    a = rng.standard_normal((128, 64), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((128, 64), dtype=np.float32).astype(ml_dtypes.bfloat16)
    monkeypatch.setenv("NKI_PRECISE_FP", "0")
    out = k.add(a, b)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, a.astype(np.float32) + b.astype(np.float32))
    # The kernel's own bfloat16 tensors are float32 too: no rounding.
    x = np.full((128, 32), 1.0 + 2.0**-12, dtype=np.float32)
    out = k.configured(x, kconfig.Act.COPY, kconfig.Scaling(), nkic.nki.language.bfloat16)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, x)


def test_compile_time_arguments_of_every_kind(rng):
    a = rng.standard_normal((128, 32), dtype=np.float32)
    # int/float/bool/None/str/tuple/list/dict, NumPy scalars, operators.
    out = k.scaled(a, np.float32(2.0), np.add, {"x": 1.5, "y": None}, ("x",), [True])
    np.testing.assert_allclose(out, a * 2.0 + 1.5, rtol=1e-6)
    out = k.scaled(a, 3, nkic.nki.language.subtract, {"x": 0.5}, ["x"], (np.bool_(True),))
    np.testing.assert_allclose(out, a * 3.0 - 0.5, rtol=1e-6)
    out = k.scaled(a, 0.5, None, {}, ("unused",), [False])
    np.testing.assert_allclose(out, a * 0.5, rtol=1e-6)


def test_enum_dataclass_and_dtype_arguments(rng):
    a = rng.standard_normal((128, 32), dtype=np.float32)
    cfg = kconfig.Scaling(scale=2.0, shift=0.25)
    out = k.configured(a, kconfig.Act.RELU, cfg, np.float32)
    np.testing.assert_allclose(out, np.maximum(a * 2.0, 0) + 0.25, rtol=1e-6)
    out = k.configured(a, kconfig.Act.COPY, kconfig.Scaling(), nkic.nki.language.bfloat16)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(out.astype(np.float32), a, rtol=1e-2)


def test_npy_files_named_by_arguments_are_shared_constants(rng, tmp_path):
    # The host saves a constant and passes its path inside a dataclass, as
    # production kernels do; the kernel embeds it with nl.shared_constant.
    a = rng.standard_normal((128, 64), dtype=np.float32)
    bias = rng.standard_normal((128, 64))  # float64 on the host
    path = str(tmp_path / "bias.npy")
    np.save(path, bias)
    out = k.add_constant(a, kconfig.Constants(files={"bias": path}))
    np.testing.assert_array_equal(out, a + bias.astype(np.float32))
    # Another file's contents at the same path compile anew.
    np.save(path, bias * 2)
    out = k.add_constant(a, kconfig.Constants(files={"bias": path}))
    np.testing.assert_array_equal(out, a + (bias * 2).astype(np.float32))
    # A path that names no file is nkic's error for a file it does not have.
    with pytest.raises(nkic.CompileError, match="is not a file this compile saved"):
        k.add_constant(a, kconfig.Constants(files={"bias": str(tmp_path / "none.npy")}))


def test_unsupported_arguments_are_type_errors(rng):
    a = rng.standard_normal((128, 32), dtype=np.float32)
    with pytest.raises(TypeError, match="cannot pass a builtins.object"):
        k.scaled(a, object(), np.add, {}, ("x",), [False])
    with pytest.raises(TypeError, match="float64"):
        k.add(a.astype(np.float64), a.astype(np.float64))


def test_the_cache_compiles_once_per_signature(rng):
    nkic.clear_cache()
    a = rng.standard_normal((128, 64), dtype=np.float32)
    before = nkic.cache_info()["compiles"]
    for _ in range(1000):
        k.add(a, a)
    first = nkic.cache_info()["compiles"]
    assert first == before + 1
    k.add(a, a)
    assert nkic.cache_info()["compiles"] == first
    k.add(a[:, :32].copy(), a[:, :32].copy())  # another shape compiles again
    assert nkic.cache_info()["compiles"] == first + 1


def test_the_cache_follows_the_source_text(tmp_path, monkeypatch):
    src = tmp_path / "edited.py"
    body = (
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"
        "@nki.jit\ndef scale(a):\n"
        "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)\n"
        "    nisa.dma_copy(dst=t, src=a)\n"
        "    r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)\n"
        "    nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=FACTOR)\n"
        "    nisa.dma_copy(dst=out, src=r)\n"
        "    return out\n"
    )
    src.write_text(body.replace("FACTOR", "2.0"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import edited

    a = np.ones((128, 8), dtype=np.float32)
    before = nkic.cache_info()["compiles"]
    np.testing.assert_array_equal(edited.scale(a), 2 * a)
    os.utime(src, ns=(1, 1))  # touched, same text: the entry stands
    np.testing.assert_array_equal(edited.scale(a), 2 * a)
    assert nkic.cache_info()["compiles"] == before + 1
    src.write_text(body.replace("FACTOR", "3.0"))  # edited: compiled again
    np.testing.assert_array_equal(edited.scale(a), 3 * a)
    assert nkic.cache_info()["compiles"] == before + 2


def test_non_contiguous_arrays_are_read_as_their_values(rng):
    a = rng.standard_normal((64, 128), dtype=np.float32).T  # (128, 64), Fortran order
    b = np.ones((128, 64), dtype=np.float32)
    np.testing.assert_array_equal(k.add(a, b), a + b)


def test_written_arguments_are_updated_in_place(rng):
    acc = rng.standard_normal((128, 64), dtype=np.float32)
    x = rng.standard_normal((128, 64), dtype=np.float32)
    expected = acc + x
    assert k.accumulate_into(acc, x) is None
    np.testing.assert_array_equal(acc, expected)


def test_lnc2_grid_of_two(rng):
    a = rng.standard_normal((256, 64), dtype=np.float32)
    c = nkic.compile(k.halves[2], a)
    assert [core["core"] for core in c.report["cores"]] == [0, 1]
    assert ".core 1" in c.nkasm
    np.testing.assert_array_equal(k.halves[2](a), a * 2.0)
    np.testing.assert_array_equal(nkic.simulate(k.halves, grid=2, lnc=1)(a), a * 2.0)


def test_negative_tensor_dims_are_value_errors():
    with pytest.raises(ValueError, match="^negative dimensions are not allowed$"):
        nkic.tensor((128, -1), np.float32)


def test_bad_launch_grids_are_value_and_type_errors(rng):
    a = rng.standard_normal((256, 64), dtype=np.float32)
    for grid in (0, -1, 2**32):
        with pytest.raises(ValueError, match=rf"launch grid's sizes are in 1..=4294967295, not {grid}$"):
            nkic.simulate(k.halves)[grid](a)
    with pytest.raises(TypeError, match="a launch grid holds ints, not 'x'"):
        nkic.simulate(k.halves)["x"](a)


def test_compile_exposes_nkasm_ir_and_report(rng):
    a = rng.standard_normal((128, 64), dtype=np.float32)
    c = nkic.compile(k.add, a, a)
    assert c.nkasm.startswith(".target trn3")
    assert "tensor_tensor" in c.ir
    report = c.report
    for field in ("target", "simulated_ns", "lower_bound_ns", "engines", "instructions",
                  "hbm_bytes_read", "hbm_bytes_written", "flops", "outputs"):
        assert field in report
    assert report["hbm_bytes_read"] == 2 * 128 * 64 * 4
    assert report["hbm_bytes_written"] == 128 * 64 * 4
    spec = nkic.compile(k.add, nkic.tensor((128, 64), np.float32), nkic.tensor((128, 64), np.float32), target="trn2")
    assert spec.nkasm.startswith(".target trn2")
    assert spec.report["target"] == "trn2"


def test_compile_matches_the_command_line(rng, tmp_path):
    """The package and `nkic compile` print the same program."""
    a = nkic.tensor((128, 64), np.float32)
    nkasm = nkic.compile(k.add, a, a).nkasm
    exe = os.environ.get("NKIC_EXE")
    if not exe:
        pytest.skip("NKIC_EXE is not set")
    cli = subprocess.run(
        [exe, "compile", k.add.source.path, "--kernel", "add",
         "--arg", "a=float32[128,64]", "--arg", "b=float32[128,64]"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert cli == nkasm


def test_check_returns_warnings_and_raises_errors(rng):
    a = rng.standard_normal((128, 64), dtype=np.float32)
    assert nkic.check(k.add, a, a) == []
    with pytest.raises(nkic.CompileError) as err:
        nkic.check(k.too_wide, nkic.tensor((256, 4), np.float32))
    assert err.value.codes and all(c.startswith("E") for c in err.value.codes)
    record = err.value.diagnostics[0]
    assert record["severity"] == "error"
    assert record["file"].endswith("elementwise.py")
    assert "elementwise.py" in str(err.value)
    assert "\x1b[" not in str(err.value)  # no colour


def test_deep_nesting_is_an_error_on_a_small_thread_stack():
    # The front end recurses as deep as its nesting limit allows; nkic runs
    # it on a thread of its own, so a caller's small stack (macOS gives
    # threads 512 KiB) still gets E0262 instead of a crashed interpreter.
    caught = []

    def compile_deep():
        with pytest.raises(nkic.CompileError) as err:
            nkic.check(deep.nested, nkic.tensor((128, 64), np.float32))
        caught.append(err.value.codes)

    previous = threading.stack_size(512 << 10)
    try:
        worker = threading.Thread(target=compile_deep)
        worker.start()
        worker.join()
    finally:
        threading.stack_size(previous)
    assert caught == [["E0262"]]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_simulates_without_the_parents_threads(rng):
    # Python's multiprocessing forks: the child has none of the parent's
    # threads (the native tier's compiler among them), so it must neither
    # wait for them nor take a lock one of them held.
    a = rng.standard_normal((256, 512), dtype=np.float32)
    b = rng.standard_normal((256, 512), dtype=np.float32)
    np.testing.assert_array_equal(k.add(a, b), a + b)
    abf, bbf = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            same = np.array_equal(k.add(a, b), a + b)
            # A signature the parent never compiled.
            same_bf16 = np.array_equal(
                k.add(abf, bbf).astype(np.float32), (abf + bbf).astype(np.float32)
            )
            code = 0 if same and same_bf16 else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 120
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0


def test_threads_run_matmuls_side_by_side(rng):
    # Runs from several Python threads share rayon's pool, on which each
    # run's large matmuls are summed (a runner job per matmul, taken by
    # any thread of the pool, a waiting run's own among them): every run
    # must finish with the bits it gives alone.
    cases = [
        (
            rng.standard_normal((384, 256), dtype=np.float32),
            rng.standard_normal((384, 512), dtype=np.float32),
        )
        for _ in range(4)
    ]
    alone = [k.matmul(a_t, b) for a_t, b in cases]
    for (a_t, b), c in zip(cases, alone):
        np.testing.assert_allclose(c, a_t.T @ b, rtol=1e-4, atol=1e-3)
    together = [None] * len(cases)

    def run(i):
        together[i] = k.matmul(*cases[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a run hung"
    for c, c_alone in zip(together, alone):
        np.testing.assert_array_equal(c, c_alone)


def test_profile_writes_trace_and_timeline(rng, tmp_path):
    a = rng.standard_normal((256, 512), dtype=np.float32)
    summary = nkic.profile(k.add, a, a, out_dir=str(tmp_path))
    assert summary["simulated_ns"] > 0
    assert summary["target"] == "trn3"
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert trace["traceEvents"]
    assert (tmp_path / "timeline.svg").read_text().startswith("<svg")


def test_out_of_bounds_is_an_index_error(rng):
    table = rng.standard_normal((256, 16), dtype=np.float32)
    idx = np.arange(128, dtype=np.int32).reshape(128, 1)
    np.testing.assert_array_equal(k.gather_rows(table, idx), table[:128])
    idx[5, 0] = 300
    with pytest.raises(IndexError) as err:
        nkic.simulate(k.gather_rows)(table, idx)
    assert isinstance(err.value, nkic.SimulationError)
    assert isinstance(err.value, nkic.OutOfBoundsError)
    assert err.value.codes == ["E2001"]
    assert "elementwise.py" in str(err.value)


def test_out_of_bounds_through_nki_is_numpys_index_error(rng):
    """Under the drop-in namespaces the exception is the NKI simulator's."""
    table = rng.standard_normal((256, 16), dtype=np.float32)
    idx = np.arange(128, dtype=np.int32).reshape(128, 1)
    idx[7, 0] = 256
    with pytest.raises(IndexError) as err:
        k.gather_rows(table, idx)
    assert type(err.value) is IndexError
    # The NKI simulator's wording: an index into the flattened tensor.
    assert str(err.value) == "index 4096 is out of bounds for axis 0 with size 4096"
    assert err.value.diagnostics[0]["code"] == "E2001"


def test_partly_written_output_is_a_warning_with_nans(rng):
    a = rng.standard_normal((128, 16), dtype=np.float32)
    with pytest.warns(nkic.NkicWarning, match="E2009"):
        out = k.half_written(a)
    np.testing.assert_array_equal(out[:64], a[:64])
    assert np.isnan(out[64:]).all()
    with pytest.raises(nkic.SimulationError, match="E2002"):
        nkic.simulate(k.half_written)._replace(poison="error")(a)


def test_compile_time_prints_and_warnings(rng, capsys):
    a = rng.standard_normal((128, 8), dtype=np.float32)
    nkic.clear_cache()
    k.printing(a, 7)
    assert capsys.readouterr().out == "n is 7\n"


def test_legacy_dialect(rng):
    a = rng.standard_normal((128, 64), dtype=np.float32)
    out = legacy.legacy_exp(a)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)


def test_target_from_the_environment(rng, monkeypatch):
    a = nkic.tensor((128, 64), np.float32)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    assert nkic.compile(k.add, a, a).target == "trn2"
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen4")
    assert nkic.compile(k.add, a, a).target == "trn3"
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen2")
    assert nkic.compile(k.add, a, a).target == "trn1"
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn4")
    with pytest.raises(ValueError, match="trn4"):
        nkic.compile(k.add, a, a)


def test_torch_tensors_come_back_as_torch(rng):
    torch = pytest.importorskip("torch")
    a = torch.randn(128, 64)
    b = torch.randn(128, 64)
    out = k.add(a, b)
    assert isinstance(out, torch.Tensor)
    assert torch.equal(out, a + b)
    acc = torch.zeros(128, 64)
    k.accumulate_into(acc, b)
    assert torch.equal(acc, b)


def test_spilling_and_no_spill(rng):
    # The bundled kernel keeps 256 KiB per partition of tiles alive: the
    # compiler spills (warning E0906) with the same result; no_spill=True
    # keeps the capacity error.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    sys.path.insert(0, os.path.join(root, "kernels"))
    try:
        from spill import spill
    finally:
        sys.path.pop(0)
    x = rng.standard_normal((128, 512), dtype=np.float32)
    want = x * np.float32(128)
    for n in range(127, 0, -1):
        want = want + x * np.float32(n)
    with pytest.warns(nkic.NkicWarning, match="E0906"):
        assert "E0906" in [w["code"] for w in nkic.check(spill, x)]
    # The same compile: the cache has it, and its warning was given once.
    np.testing.assert_array_equal(nkic.simulate(spill)(x), want)
    with pytest.raises(nkic.CompileError) as err:
        nkic.simulate(spill, no_spill=True)(x)
    assert err.value.codes == ["E0901"]
