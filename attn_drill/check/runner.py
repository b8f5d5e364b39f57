"""Run the worker process, watch the clock, and turn hangs and crashes into reports. No torch here."""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from attn_drill import findings
from attn_drill.report import FAIL, SKIP, STAGES, Report, Stage

DEFAULT_TIMEOUT = 10.0  # seconds for one file's checks, once torch is imported
STARTUP_LIMIT = 120.0  # importing torch on a cold disk can be slow; this only guards against a wedged start


@dataclass
class Job:
    path: Path
    exercise: str


def run_checks(jobs: list[Job], *, seed: int | None = None, timeout: float = DEFAULT_TIMEOUT) -> Iterator[Report]:
    """Check each job's file; yield one Report per job, in order."""
    if seed is None:
        seed = random.randrange(10_000)
    pending = list(jobs)
    while pending:
        done = yield from _run_worker(pending, seed, timeout)
        pending = pending[done:]


def _run_worker(jobs: list[Job], seed: int, timeout: float) -> Iterator[Report]:
    """One worker for as many jobs as it gets through; returns how many were reported."""
    read_fd, write_fd = os.pipe()
    spec = {"seed": seed, "jobs": [{"path": str(j.path), "exercise": j.exercise} for j in jobs]}
    log = tempfile.TemporaryFile()  # the user's prints, and a crash's last words
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # no __pycache__ left beside the user's file
    proc = subprocess.Popen(
        [sys.executable, "-m", "attn_drill.check.worker", str(write_fd), json.dumps(spec)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        pass_fds=(write_fd,), env=env, start_new_session=True,
    )
    os.close(write_fd)
    reader = _Lines(read_fd)
    reported, current, stages = 0, None, []
    deadline = time.monotonic() + STARTUP_LIMIT
    try:
        while True:
            line = reader.next(deadline)
            if line is _TIMEOUT:
                _kill(proc)
                if current is None:
                    yield _worker_failed(jobs[0], seed, "the checker did not start in time", log)
                else:
                    yield _timed_out(jobs[current], seed, stages, timeout)
                return reported + 1
            if line is None:  # the worker is gone
                proc.wait()
                if current is None and reported == len(jobs):
                    return reported
                job = jobs[current if current is not None else reported]
                yield _crashed(job, seed, stages, proc.returncode, log)
                return reported + 1
            event = json.loads(line)
            kind = event["event"]
            if kind == "start":
                current, stages = event["index"], []
                deadline = time.monotonic() + timeout
            elif kind == "stage":
                stages.append(Stage(**event["stage"]))
            elif kind == "report":
                yield Report.from_wire(event["report"])
                reported, current = reported + 1, None
                deadline = time.monotonic() + STARTUP_LIMIT
    finally:
        _kill(proc)
        reader.close()
        log.close()


_TIMEOUT = object()


class _Lines:
    """Read newline-terminated lines from a pipe with a deadline."""

    def __init__(self, fd: int):
        self.fd, self.buf = fd, b""

    def next(self, deadline: float):
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return _TIMEOUT
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return _TIMEOUT
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8")

    def close(self):
        os.close(self.fd)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()


def _partial(job: Job, seed: int, stages: list[Stage], failed_detail: str) -> Report:
    report = Report(job.exercise, str(job.path), seed, stages=list(stages))
    done = {s.name for s in stages}
    todo = [name for name in STAGES if name not in done]
    if todo:
        report.stages.append(Stage(todo[0], FAIL, failed_detail))
        report.stages += [Stage(name, SKIP, "skipped: an earlier stage failed") for name in todo[1:]]
    return report


def _timed_out(job: Job, seed: int, stages: list[Stage], timeout: float) -> Report:
    stage = next((n for n in STAGES if n not in {s.name for s in stages}), "device")
    report = _partial(job, seed, stages, f"did not finish within {timeout:g} s")
    report.findings.append(findings.make(
        "timeout", f"the {stage} stage was still running after {timeout:g} s", seconds=f"{timeout:g}", score=1.0))
    return report


def _tail(log) -> str:
    log.seek(0)
    text = log.read().decode("utf-8", "replace").strip().splitlines()
    return "\n".join(text[-5:])


def _crashed(job: Job, seed: int, stages: list[Stage], returncode: int, log) -> Report:
    how = f"killed by signal {-returncode}" if returncode < 0 else f"exited with status {returncode}"
    report = _partial(job, seed, stages, f"the process running your code {how}")
    tail = _tail(log)
    evidence = f"the process {how}" + (f"; its last output:\n{tail}" if tail else "")
    report.findings.append(findings.make("crash", evidence, score=1.0))
    return report


def _worker_failed(job: Job, seed: int, why: str, log) -> Report:
    report = _partial(job, seed, [], why)
    report.findings.append(findings.make("crash", f"{why}\n{_tail(log)}", score=1.0))
    return report
