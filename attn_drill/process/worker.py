"""The process that imports torch (once) and checks each file in turn.

Run by runner.py as `python -m attn_drill.process.worker FD SPEC_JSON`; it writes one JSON event per line
to file descriptor FD: {"event": "start"}, {"event": "stage"}, {"event": "report"} (for a job with a "task",
{"event": "report", "payload": the task's JSON result} instead of a report). The user's prints go
to this process's stdout, which sandbox.py keeps per file and puts in the report (its first and last lines).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

CHANNEL_LOST = 70  # the exit status that tells the runner the report channel was taken away


def main(argv: list[str]) -> int:
    """argv: [name, FD] with the spec on stdin (a cold worker: nothing of it shows in /proc/PID/cmdline),
    or [name, FD, SPEC_JSON] (a warm server's child, whose command line is the server's)."""
    out = os.fdopen(int(argv[1]), "w", buffering=1, encoding="utf-8")
    spec = json.loads(argv[2] if len(argv) > 2 else sys.stdin.read())
    sign = signer(spec.pop("key", ""))
    dumps, me = json.dumps, os.getpid()  # captured before any user code runs

    def send(event: dict) -> None:
        if os.getpid() != me:  # a copy made by os.fork() in the user's code: only the worker itself reports
            os._exit(0)
        try:
            line = dumps(event)
            out.write(sign(line) + " " + line + "\n")
            out.flush()
        except (OSError, ValueError):  # the user's code closed or replaced the channel: say so by the exit status
            os._exit(CHANNEL_LOST)

    prepare_torch()  # the one slow import, paid before any clock starts
    gpu = start_gpu(spec["gpu"]) if spec.get("gpu") else None  # before the walls, which the driver would meet

    try:  # an import that fails is ours too (a broken install, a bug): each job says so, none is the user's
        from attn_drill.process import sandbox
        from attn_drill.judge import tamper
        from attn_drill.judge.engine import check_file
        from attn_drill import findings, i18n

        i18n.table(i18n.lang(), "ui"), findings.mistakes()  # the language and its words, fixed before user code runs
        from attn_drill.judge.specs.base import load_references, needed

        # a check loads only the references it reads (each costs a compile); explain and show, every one
        tasks = {job.get("task") for job in spec["jobs"]} - {None, "gpu"}
        load_references(None if tasks else needed(job["exercise"] for job in spec["jobs"]))
        # the last step before user code: from here on it may write only in the scratch folder (Linux)
        files = [p for job in spec["jobs"] for p in (job.get("path"), job.get("imports_from")) if p]
        confinement = sandbox.confine(spec.get("fault_fd"), scratch=spec.get("scratch"), parent=spec.get("parent"),
                                      files=files, gpu=bool(spec.get("gpu")))
        guard = Guard(tamper.snapshot(), tamper.changed_since)
    except Exception as e:  # no user code has run yet: whatever failed is ours, never the user's mistake
        for index, job in enumerate(spec["jobs"]):
            send({"event": "start", "index": index})
            if job.get("task"):
                send({"event": "report", "payload": {"error": f"the checker itself failed ({e})"}})
            else:
                send({"event": "report", "report": internal_error(job, spec["seed"], e).to_wire()})
        out.close()
        os._exit(0)
    for index, job in enumerate(spec["jobs"]):
        send({"event": "start", "index": index})
        sandbox.begin_job()
        if job.get("imports_from"):  # after the file's own folder (load puts that first): one job per process
            sys.path.insert(0, job["imports_from"])
        if job.get("task"):  # not a check: the task's JSON result goes back as the report's payload
            send({"event": "report", "payload": run_task(job, spec["seed"], gpu)})
            continue
        report = run_job(job, spec["seed"], check_file,
                         emit=lambda stage: send({"event": "stage", "stage": asdict(stage)}))
        guard.verify(report)
        report.output = sandbox.job_output()
        report.confinement = confinement  # what is not enforced, in words; "" when all is
        send({"event": "report", "report": report.to_wire()})
    out.close()
    # Leave at once: atexit handlers, finalizers and non-daemon threads of the user's code never run or wait.
    os._exit(0)


def signer(key: str):
    """Each event line goes out with its HMAC under a key only the runner and this process know, so a line
    the user's code writes into the channel (the descriptor is easy to find) is never taken for ours."""
    import hashlib
    import hmac

    secret, new, sha256 = key.encode(), hmac.new, hashlib.sha256  # captured before any user code runs
    return lambda line: new(secret, line.encode(), sha256).hexdigest()


_prepared = False


def prepare_torch() -> None:
    """Import torch and set it up for the checks, once per process (a warm server's forked children inherit it)."""
    global _prepared
    if _prepared:
        return
    import torch

    keep_dynamo_out()
    torch.set_num_threads(1)  # tiny tensors: threads only cost start-up time (and no thread pool to break on fork)
    _prepared = True


def keep_dynamo_out() -> None:
    """Stop the meta device's Python kernels from importing torch._dynamo (0.7 s) on first use.

    Many of them are wrapped in torch._compile._disable_dynamo, which imports dynamo on the first call only
    to wrap the function in "dynamo disabled". The checker never compiles, so resolving each wrapper to its
    plain function is harmless. If torch changes this layout, nothing breaks: the first meta call is slower.
    """
    import types

    import torch._compile

    from attn_drill.judge.tamper import filled

    code = torch._compile._disable_dynamo(lambda: None).__code__
    if "fn" not in code.co_freevars:
        return
    slot = code.co_freevars.index("fn")
    prefixes = ("torch._refs", "torch._prims", "torch._decomp", "torch._meta_registrations")
    todo = [obj for name, mod in list(sys.modules.items()) if name.startswith(prefixes)
            for obj in list(vars(mod).values()) if isinstance(obj, types.FunctionType)]
    seen = set()
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if fn.__code__ is code:
            inner = fn.__closure__[slot].cell_contents
            inner.__dynamo_disable = inner
        wrapped = getattr(fn, "__wrapped__", None)
        cells = [c.cell_contents for c in fn.__closure__ or () if filled(c)]
        todo += [f for f in [wrapped, *cells] if isinstance(f, types.FunctionType)]


class Guard:
    """The last word on tampering, with the snapshot and the check taken before any user code ran."""

    def __init__(self, snap, changed_since):
        self.snap, self.changed_since = snap, changed_since

    def verify(self, report) -> None:
        changed = self.changed_since(self.snap)
        if changed:
            from attn_drill.judge import tamper

            report.findings.append(tamper.finding(changed, "your code replaced", " (seen after the check ended)"))


def run_job(job: dict, seed: int, check_file, emit):
    """One file's report, whatever escapes the engine."""
    stages = []

    def emit_and_keep(stage):
        stages.append(stage)
        emit(stage)

    try:
        return check_file(Path(job["path"]), job["exercise"], seed, emit=emit_and_keep)
    except BaseException as e:  # noqa: BLE001 - user code may raise anything, SystemExit included
        return escaped(job, seed, stages, e)


def start_gpu(device: str) -> dict:
    """Initialise the GPU for the device stage's GPU half (process/gpu.py), before sandbox.confine: the driver
    opens device files, maps memory and loads libraries that the walls would refuse later, and the memory cap
    is then measured on top of what it holds. A product and a softmax in each dtype load their kernels.
    {"device", "name"}, or {"unavailable": why} (no user code has run: never the user's mistake)."""
    import torch

    if device == "cpu":  # ATTN_DRILL_GPU=cpu: the GPU half's path, run on the CPU (tests)
        return {"device": "cpu", "name": None}  # named in the language in use, once i18n is loaded (run_task)
    try:
        torch.cuda.init()
        x = torch.randn(64, 64, device=device)
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            y = x.to(dtype)
            float((y @ y.T).softmax(-1).sum())
        return {"device": device, "name": f"CUDA ({torch.cuda.get_device_name()})"}
    except Exception as e:  # noqa: BLE001 - a driver that will not start says so in the report, once
        return {"unavailable": f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"}


def run_task(job: dict, seed: int, gpu: dict | None = None) -> dict:
    """A job that is not a check (job["task"]: "explain" traces a passing file for `attn-drill explain`, "maps"
    draws its attention weights for `attn-drill show`, "gpu" runs the device stage on the GPU that `gpu`
    describes, see start_gpu): its JSON-able result, or {"error": ...} with what escaped it."""
    try:
        if job["task"] == "gpu":
            if not gpu or "unavailable" in gpu:
                return {"unavailable": (gpu or {}).get("unavailable", "this worker did not start a GPU")}
            from attn_drill.judge.engine import Check

            from attn_drill.i18n import t

            name = gpu["name"] or t("evidence.process.gpu.the_cpu")
            report = Check(Path(job["path"]), job["exercise"], seed).on_gpu(gpu["device"], name)
            return {"report": report.to_wire()}
        if job["task"] == "explain":
            from attn_drill.judge import explain

            return explain.run(Path(job["path"]), job["exercise"], seed)
        if job["task"] == "maps":  # `attn-drill show`: every head's weights, the user's and the reference's
            from attn_drill.judge import show as maps

            return maps.run(Path(job["path"]), job["exercise"], seed)
        return {"error": f"no task called {job['task']!r}"}
    except BaseException as e:  # noqa: BLE001 - user code may raise anything, SystemExit included
        from attn_drill.judge import load

        return {"error": f"it raised {load.describe(e)}"}


def escaped(job: dict, seed: int, stages: list, exc: BaseException):
    """An exception the engine did not catch: the user's when it passed through their file, else ours."""
    from attn_drill.judge import load
    from attn_drill.report import partial_report

    path = Path(job["path"])
    line, _ = load.user_line(exc, path)
    if line is None:
        return internal_error(job, seed, exc, stages)
    from attn_drill.i18n import t

    report = partial_report(job["exercise"], path, seed, stages, t("evidence.process.worker.raised",
                                                                     error=load.describe(exc)))
    report.findings.append(load.exception_finding(exc, path, t("evidence.process.worker.looking")))
    return report


def internal_error(job: dict, seed: int, exc: BaseException, stages=()):
    import traceback

    from attn_drill import findings
    from attn_drill.judge import load
    from attn_drill.report import partial_report

    report = partial_report(job["exercise"], job["path"], seed, list(stages), "the checker itself failed")
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (in {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    report.findings.append(findings.make("internal-error", f"{load.describe(exc)}{where}", score=3.0))
    return report


if __name__ == "__main__":
    sys.exit(main(sys.argv))
