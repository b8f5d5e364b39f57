"""The device stage's GPU half: whether this machine has a GPU, how a worker hides it or owns it, and how its
report joins the check's. No torch here.

A process that has initialised CUDA cannot fork a child that uses it, and once autograd has run with a GPU
visible, a forked child cannot use autograd at all. So every CPU worker (a cold one, a warm server and its
forked children) runs with the GPU hidden (`hidden`): its verdict is the same on every machine and it never
pays CUDA's start-up. Where a GPU is present, the runner then checks a file that passed every CPU stage once
more in a cold worker of its own that initialises the GPU before it confines itself (worker.start_gpu) and
runs the first case there in float32, float16 and bfloat16 (engine.Check.on_gpu); `fold` puts what it found
into the report's device stage, as findings like any other.

ATTN_DRILL_GPU=off skips that run; ATTN_DRILL_GPU=cpu runs its whole path on the CPU (for tests on machines
without a GPU: the numbers are the CPU's, and the report says "on the CPU").
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

from attn_drill.i18n import t
from attn_drill.report import FAIL, PASS, SKIP, WARN, Report

HIDE = {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}  # NVIDIA's and AMD's way of listing no device
_RANK = {PASS: 0, SKIP: 0, WARN: 1, FAIL: 2}


@functools.cache
def device() -> str | None:
    """"cuda" where torch was built for a GPU and this machine has one, "cpu" under ATTN_DRILL_GPU=cpu, else
    None. Read from files (torch's version.py, the driver's device nodes): nothing is imported or started."""
    wanted = os.environ.get("ATTN_DRILL_GPU", "").strip().lower()
    if wanted in ("off", "0", "no"):
        return None
    if wanted == "cpu":
        return "cpu"
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return None
    built = _torch_built_for()
    if built == "cuda" and (Path("/dev/nvidiactl").exists() or Path("/dev/nvidia0").exists()):
        return "cuda"
    if built == "hip" and Path("/dev/kfd").exists():
        return "cuda"  # ROCm's torch calls its devices cuda too
    return None


def _torch_built_for() -> str | None:
    """"cuda" or "hip" from torch/version.py's text (a CPU wheel has cuda = None and hip = None)."""
    try:
        found = importlib.util.find_spec("torch")
        text = (Path(found.origin).parent / "version.py").read_text()
    except (ImportError, AttributeError, TypeError, ValueError, OSError):
        return None
    for line in text.splitlines():
        for kind in ("cuda", "hip"):
            if line.startswith(f"{kind}:") or line.startswith(f"{kind} ="):
                value = line.split("=", 1)[-1].strip()
                if value not in ("None", ""):
                    return kind
    return None


def hidden(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a CPU worker: `env` (default ours) with every GPU hidden."""
    return dict(os.environ if env is None else env, **HIDE)


def wanted(report) -> bool:
    """Run the GPU half for this report: there is a GPU, and the check reached the device stage."""
    if device() is None or not isinstance(report, Report):
        return False
    stage = next((s for s in report.stages if s.name == "device"), None)
    return stage is not None and stage.status in (PASS, WARN)


def fold(report: Report, result) -> None:
    """Put the GPU run's outcome into `report`: its stage joins the device stage (the worse status wins, both
    details kept), its findings join the report's. `result` is the task's payload ({"report": ...}, or
    {"unavailable": why} when the GPU would not start, which is no verdict on the code), or the Report of a GPU
    worker that crashed or ran out of time after the user's code started."""
    stage = next(s for s in report.stages if s.name == "device")
    if isinstance(result, Report):  # the GPU worker died or hung running the user's code: that is on the GPU
        gpu = result
        for f in gpu.findings:
            f.evidence = t("evidence.process.gpu.on_gpu", what=f.evidence)
        failed = next((s for s in gpu.stages if s.status == FAIL), None)
        status, detail = FAIL, t("evidence.process.gpu.on_gpu",
                                 what=failed.detail if failed else t("evidence.process.gpu.failed"))
    elif isinstance(result, dict) and isinstance(result.get("report"), dict):
        gpu = Report.from_wire(result["report"])
        own = next((s for s in gpu.stages if s.name == "device"), None)
        status, detail = (own.status, own.detail) if own else (FAIL, t("evidence.process.gpu.said_nothing"))
    else:
        why = result.get("unavailable") or result.get("error") if isinstance(result, dict) else None
        stage.detail += t("evidence.process.gpu.unusable", why=why or t("evidence.process.gpu.no_answer"))
        return
    if any(f.slug == "internal-error" for f in gpu.findings):
        stage.detail += t("evidence.process.gpu.ours")
        return
    if status == PASS and stage.status == WARN and device() == "cuda":
        # the meta device's warning is a guess (a tensor made on the CPU and never moved); the GPU ran the code
        # and it matched, which settles it
        report.findings = [f for f in report.findings if f.slug != "device-mismatch"]
        stage.status = PASS
        detail += t("evidence.process.gpu.settled")
    report.findings += gpu.findings
    if _RANK[status] > _RANK.get(stage.status, 0):
        stage.status = status
    stage.detail += t("evidence.process.gpu.then", what=detail)
    report.sort_findings()
