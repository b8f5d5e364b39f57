"""The device stage's GPU half (process/gpu.py): CPU workers never see a GPU; where one is present, a file that
passed every CPU stage runs there too, in a worker that initialised it itself, in float32 and the half types,
and what fails only there is named like any other mistake.

Without a GPU the same path runs with ATTN_DRILL_GPU=cpu (the GPU worker then runs on the CPU and says so);
with one, the tests marked `real` run it on CUDA. The file that fails "only on the GPU" tells the two workers
apart by their environment: a CPU worker has CUDA_VISIBLE_DEVICES set to "", the GPU worker does not.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from attn_drill.process import gpu
from attn_drill.report import FAIL, PASS, Finding, Report, Stage
from conftest import attn_drill_script

ROOT = Path(__file__).parent.parent
REFERENCE = ROOT / "reference" / "sdpa.py"
ON_GPU = 'import os\nON_GPU = os.environ.get("CUDA_VISIBLE_DEVICES") != ""\n'


def real_gpu() -> str | None:
    gpu.device.cache_clear()
    import os

    saved = os.environ.pop("ATTN_DRILL_GPU", None)
    try:
        return gpu.device()
    finally:
        if saved is not None:
            os.environ["ATTN_DRILL_GPU"] = saved
        gpu.device.cache_clear()


real = pytest.mark.skipif(real_gpu() != "cuda", reason="no GPU here: the GPU half runs on the CPU instead")


def check(*files: Path, gpu_mode: str, exercise: str = "sdpa", timeout: str = "10") -> list[dict]:
    import os

    env = dict(os.environ, ATTN_DRILL_GPU=gpu_mode)
    if gpu_mode == "real":
        env.pop("ATTN_DRILL_GPU")
    r = subprocess.run([attn_drill_script(), "check", *map(str, files), "--exercise", exercise, "--json",
                        "--seed", "5", "--no-record", "--timeout", timeout], capture_output=True, text=True,
                       timeout=300, env=env)
    decoder, text, reports = json.JSONDecoder(), r.stdout.strip(), []
    while text:
        obj, end = decoder.raw_decode(text)
        reports.append(obj)
        text = text[end:].strip()
    assert reports, r.stderr
    return reports


def device_stage(report: dict) -> dict:
    return next(s for s in report["stages"] if s["name"] == "device")


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_cpu_workers_see_no_gpu_cold_or_warm(isolated):
    """A cold worker (one file) and a warm server's children (a batch) both run with every GPU hidden."""
    tell = REFERENCE.read_text() + '\nimport os\nprint("visible:", repr(os.environ.get("CUDA_VISIBLE_DEVICES")))\n'
    files = [write(isolated, f"sdpa{i}.py", tell) for i in range(5)]
    for reports in (check(files[0], gpu_mode="off"), check(*files, gpu_mode="off")):
        for r in reports:
            assert r["passed"] and "visible: ''" in r["output"], r


def test_the_model_answer_runs_in_the_gpu_half(isolated):
    """(sdpa's model answer runs there in the batch test below, in the half types too.)"""
    (r,) = check(ROOT / "reference" / "masks.py", gpu_mode="cpu", exercise="masks")
    detail = device_stage(r)["detail"]
    assert r["passed"] and device_stage(r)["status"] == PASS, r
    assert "it runs on the CPU in float32 and matches" in detail, detail  # masks: integer inputs, no half types


def test_values_that_differ_only_in_the_gpu_half_are_named(isolated):
    text = REFERENCE.read_text().replace("    return out, weights", "    return (out * 1.5 if ON_GPU else out), weights")
    f = write(isolated, "sdpa.py", ON_GPU + text)
    (cpu_only,) = check(f, gpu_mode="off")
    assert cpu_only["passed"], cpu_only  # the CPU stages see nothing wrong
    (r,) = check(f, gpu_mode="cpu")
    assert not r["passed"] and device_stage(r)["status"] == FAIL, r
    assert r["findings"][0]["slug"] == "values-mismatch", r["findings"]
    assert "float32 on the CPU" in r["findings"][0]["evidence"], r["findings"][0]


def test_an_error_raised_only_in_the_gpu_half_is_named_with_its_line(isolated):
    text = REFERENCE.read_text().replace("    out = weights @ v  # (..., Tq, dv)",
                                         "    if ON_GPU:\n        raise ValueError('only here')\n    out = weights @ v")
    f = write(isolated, "sdpa.py", ON_GPU + text)
    (r,) = check(f, gpu_mode="cpu")
    first = r["findings"][0]
    assert not r["passed"] and first["slug"] == "exception", r
    assert "only here" in first["evidence"] and "on the CPU" in first["evidence"], first
    line = next(i for i, t in enumerate(f.read_text().splitlines(), 1) if "raise ValueError" in t)
    assert first["line"] == line, first


def test_a_hang_in_the_gpu_half_ends_in_a_timeout_named_there(isolated):
    text = REFERENCE.read_text().replace("    out = weights @ v  # (..., Tq, dv)",
                                         "    while ON_GPU:\n        pass\n    out = weights @ v")
    f = write(isolated, "sdpa.py", ON_GPU + text)
    (r,) = check(f, gpu_mode="cpu", timeout="3")  # the loop is endless: any limit will do
    assert not r["passed"] and device_stage(r)["status"] == FAIL, r
    assert r["findings"][0]["slug"] == "timeout" and r["findings"][0]["evidence"].startswith("on the GPU:"), r


def test_a_file_that_fails_on_the_cpu_is_not_run_on_the_gpu(isolated):
    f = write(isolated, "sdpa.py", REFERENCE.read_text().replace(" / math.sqrt(d)", ""))
    (r,) = check(f, gpu_mode="cpu")
    assert r["findings"][0]["slug"] == "missing-scale", r
    assert "runs on the CPU in" not in json.dumps(r), r


def test_a_batch_runs_each_passing_file_in_the_gpu_half(isolated):
    files = [write(isolated, f"sdpa{i}.py", REFERENCE.read_text()) for i in range(2)]
    files.append(write(isolated, "gpu_only.py", ON_GPU + REFERENCE.read_text().replace(
        "    return out, weights", "    return (out + 1 if ON_GPU else out), weights")))
    reports = check(*files, gpu_mode="cpu")
    assert [r["passed"] for r in reports] == [True] * 2 + [False], reports
    assert all("it runs on the CPU in float32, float16 and bfloat16 and matches" in device_stage(r)["detail"]
               for r in reports[:2]), reports


# -- fold, on its own ---------------------------------------------------------------------------------------
def passed_report() -> Report:
    stages = [Stage(n, PASS, "ok") for n in ("load", "api", "shapes", "values", "gradients", "dtypes", "device")]
    return Report("sdpa", "f.py", 1, stages=stages)


def test_a_gpu_that_will_not_start_is_said_and_judges_nothing():
    r = passed_report()
    gpu.fold(r, {"unavailable": "RuntimeError: no CUDA-capable device is detected"})
    assert r.passed and "could not use it (RuntimeError: no CUDA-capable device" in r.stages[-1].detail


def test_our_own_failure_on_the_gpu_is_never_the_users_mistake():
    r = passed_report()
    ours = Report("sdpa", "f.py", 1, stages=[Stage("device", FAIL, "the checker itself failed")],
                  findings=[Finding("internal-error", "error", "t", "m", "e", "f", score=3.0)])
    gpu.fold(r, {"report": ours.to_wire()})
    assert r.passed and not r.findings and "failed on our side" in r.stages[-1].detail


def test_device_is_read_from_files_and_the_environment(monkeypatch):
    monkeypatch.setattr(gpu, "_torch_built_for", lambda: None)
    for mode, want in (("off", None), ("cpu", "cpu"), ("", None)):
        monkeypatch.setenv("ATTN_DRILL_GPU", mode)
        gpu.device.cache_clear()
        assert gpu.device() == want, mode
    monkeypatch.setenv("ATTN_DRILL_GPU", "")
    monkeypatch.setattr(gpu, "_torch_built_for", lambda: "cuda")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    gpu.device.cache_clear()
    assert gpu.device() is None  # hidden by the user
    gpu.device.cache_clear()


def test_this_torch_build_is_read_right():
    import torch

    want = "hip" if torch.version.hip else "cuda" if torch.version.cuda else None
    assert gpu._torch_built_for() == want


# -- on a real GPU --------------------------------------------------------------------------------------------
@real
def test_on_a_real_gpu_the_model_answers_run_on_cuda(isolated):
    for exercise, file in (("sdpa", "sdpa.py"), ("mha", "mha.py"), ("masks", "masks.py")):
        (r,) = check(ROOT / "reference" / file, gpu_mode="real", exercise=exercise)
        assert r["passed"] and "it runs on CUDA (" in device_stage(r)["detail"], r


@real
def test_on_a_real_gpu_a_tensor_made_on_the_cpu_is_named(isolated):
    text = REFERENCE.read_text().replace("    out = weights @ v  # (..., Tq, dv)",
                                         "    out = (weights @ v) + torch.zeros(v.shape[-1], dtype=v.dtype)")
    (r,) = check(write(isolated, "sdpa.py", text), gpu_mode="real")
    assert r["findings"][0]["slug"] == "device-mismatch", r


@real
def test_on_a_real_gpu_a_default_made_on_the_cpu_for_a_missing_input_is_named(isolated):
    """The default mask is made (no device=) only when no mask is given: the GPU half runs that way of calling
    too, so the meta device's warning is confirmed there, never "settled" by a case that had a mask."""
    f = ROOT / "tests" / "corpus" / "sdpa" / "device-mismatch__blind_b42_default_mask_cpu.py"
    (r,) = check(f, gpu_mode="real")
    assert r["findings"][0]["slug"] == "device-mismatch" and device_stage(r)["status"] == FAIL, r
    assert "does not hold" not in device_stage(r)["detail"], r
    assert any("on CUDA" in f["evidence"] and "no mask" in f["evidence"] for f in r["findings"]), r


@real
def test_on_a_real_gpu_a_tensor_made_from_one_made_on_the_cpu_and_moved_is_fine(isolated):
    """The slopes are made with no device= and moved later through a tensor made from them: neither the meta
    device nor the GPU calls that a mistake."""
    f = ROOT / "tests" / "corpus" / "alibi" / "ok__blind_b33_einsum_tril.py"
    (r,) = check(f, gpu_mode="real", exercise="alibi")
    assert r["passed"] and device_stage(r)["status"] == PASS and not r["findings"], r
    assert "it runs on CUDA (" in device_stage(r)["detail"], r


@real
def test_on_a_real_gpu_the_meta_devices_guess_is_settled(isolated):
    """On the meta device a CPU buffer written with the heads' weights cannot be told from a mistake (the copy out
    of meta raises); the layer never returns that buffer, so on a GPU it runs and matches, and that settles it."""
    f = ROOT / "tests" / "corpus" / "decoder-layer" / "device-mismatch__per_head_weights_buffer.py"
    (r,) = check(f, gpu_mode="real", exercise="decoder-layer")
    assert r["passed"] and device_stage(r)["status"] == PASS and not r["findings"], r
    assert "does not hold" in device_stage(r)["detail"], r
