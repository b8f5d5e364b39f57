"""Run the worker process, watch the clock, and turn hangs and crashes into reports. No torch here.

Whatever the user's code does (loops forever, segfaults, calls os._exit, closes or scribbles on the
worker's report channel, leaves threads or children behind), each job ends in one Report within its time
limit: the worker runs in its own session and the whole process group is killed when we are done.
"""

from __future__ import annotations

import json
import os
import random
import re
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
from attn_drill.process import sandbox
from attn_drill.process.worker import CHANNEL_LOST  # the worker module imports no torch at its top
from attn_drill.report import STAGES, Report, Stage, partial_report

DEFAULT_TIMEOUT = 10.0  # seconds for one file's checks, once torch is imported
STARTUP_LIMIT = 120.0  # importing torch on a cold disk can be slow; this only guards against a wedged start
EXIT_GRACE = 2.0  # seconds a worker that closed its channel gets to exit before it is killed


@dataclass
class Job:
    path: Path
    exercise: str


def run_checks(jobs: list[Job], *, seed: int | None = None, timeout: float = DEFAULT_TIMEOUT,
               spawn=None) -> Iterator[Report]:
    """Check each job's file; yield one Report per job, in order. `spawn` starts the worker: by default
    `spawn_worker`, a new process; process/warm.py's WarmPool.spawn forks one from a warm process."""
    if seed is None:
        seed = random.randrange(10_000)
    pending = list(jobs)
    while pending:
        done = yield from _run_worker(pending, seed, timeout, spawn or spawn_worker)
        pending = pending[done:]


def spawn_worker(spec: dict, fds: tuple[int, ...], log) -> subprocess.Popen:
    """`python -m attn_drill.process.worker FD SPEC` with FD = fds[0], the event pipe. It inherits `fds` at the
    same numbers (spec may name them), prints into `log`, and leads a process group of its own."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # no __pycache__ left beside the user's file
    return subprocess.Popen(
        [sys.executable, "-m", "attn_drill.process.worker", str(fds[0]), json.dumps(spec)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        pass_fds=fds, env=env, start_new_session=True,
    )


def _run_worker(jobs: list[Job], seed: int, timeout: float, spawn) -> Iterator[Report]:
    """One worker for as many jobs as it gets through; returns how many were reported."""
    read_fd, write_fd = os.pipe()
    log = tempfile.TemporaryFile()  # the user's prints, and a crash's last words
    faults = tempfile.TemporaryFile()  # faulthandler's Python stack on a segfault or just before a timeout
    spec = {"seed": seed, "fault_fd": faults.fileno(),
            "jobs": [{"path": str(j.path), "exercise": j.exercise} for j in jobs]}
    proc = spawn(spec, (write_fd, faults.fileno()), log)
    os.close(write_fd)
    reader = _Lines(read_fd)
    reported, current, stages = 0, None, []
    deadline = time.monotonic() + STARTUP_LIMIT
    try:
        while reported < len(jobs):
            line = reader.next(deadline)
            if line is _TIMEOUT:
                if current is None:
                    kill(proc)
                    yield _worker_failed(jobs[reported], seed, "the checker did not start in time", log)
                else:
                    _ask_for_stack(proc, faults)  # the verdict is a timeout already, whatever happens next
                    kill(proc)
                    yield _timed_out(jobs[current], seed, stages, timeout, log, faults)
                return reported + 1
            event = _parse(line, len(jobs))
            if event is None:  # the worker is gone, or something else wrote into its channel
                stop(proc)
                job = jobs[current if current is not None else reported]
                yield _crashed(job, seed, stages, proc.returncode, log, faults, garbled=line is not None)
                return reported + 1
            kind = event["event"]
            if kind == "start":
                current, stages = event["index"], []
                deadline = time.monotonic() + timeout
            elif kind == "stage":
                stages.append(event["stage"])
            elif kind == "report":
                yield event["report"]
                reported, current = reported + 1, None
                deadline = time.monotonic() + STARTUP_LIMIT
        return reported
    finally:
        kill(proc)  # a worker done with its jobs may still hold threads or children of the user's code
        reader.close()
        log.close()
        faults.close()


def _parse(line, n_jobs: int) -> dict | None:
    """An event from the worker, with its stage or report rebuilt; None for EOF or anything malformed."""
    if line is None:
        return None
    try:
        event = json.loads(line)
        kind = event["event"]
        if kind == "start":
            event["index"] = int(event["index"])
            if not 0 <= event["index"] < n_jobs:
                return None
        elif kind == "stage":
            event["stage"] = Stage(**event["stage"])
        elif kind == "report":
            event["report"] = Report.from_wire(event["report"])
        else:
            return None
        return event
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


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
        return line.decode("utf-8", "replace")

    def close(self):
        os.close(self.fd)


def _ask_for_stack(proc, faults, wait: float = 0.3) -> None:
    """SIGUSR1 makes the worker's faulthandler write its Python stack to the fault file; wait a moment for it."""
    try:
        size = os.fstat(faults.fileno()).st_size
        os.kill(proc.pid, signal.SIGUSR1)
    except (OSError, ValueError):
        return
    end = time.monotonic() + wait
    while time.monotonic() < end:
        time.sleep(0.01)
        if os.fstat(faults.fileno()).st_size > size:
            time.sleep(0.02)  # let it finish the dump
            return


def kill(proc: subprocess.Popen) -> None:
    """Kill the worker's whole process group: threads and children of the user's code go with it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.kill()
    proc.wait()


def stop(proc: subprocess.Popen, grace: float = EXIT_GRACE) -> None:
    """The channel closed: let the worker finish dying (to learn how), then make sure of it."""
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        kill(proc)


def _verdict(job: Job, seed: int, stages: list[Stage], log, faults, slug: str, detail: str, said: str,
             stage_detail: str | None = None, **params):
    """A report the worker could not send: the stages it did, the next one failed, one finding naming the user's
    line from faulthandler's dump where there is one, and what the code printed."""
    report = partial_report(job.exercise, job.path, seed, stages, stage_detail or detail)
    line, text = _user_frame(faults, job.path) if faults is not None else (None, "")
    at = f"\n    {said} your line {line}: {text}" if line else ""
    report.findings.append(findings.make(slug, detail + at, line=line, score=1.0, **params))
    report.output = sandbox.read_excerpt(log.fileno())
    return report


def _timed_out(job: Job, seed: int, stages: list[Stage], timeout: float, log, faults) -> Report:
    stage = next((n for n in STAGES if n not in {s.name for s in stages}), "device")
    return _verdict(job, seed, stages, log, faults, "timeout",
                    f"the {stage} stage was still running after {timeout:g} s", "it was at",
                    stage_detail=f"did not finish within {timeout:g} s", seconds=f"{timeout:g}")


# Why a process dies of a signal, in words
SIGNAL_WORDS = {
    "SIGSEGV": "a segmentation fault: native code (ctypes, a C extension) touched memory it does not own",
    "SIGBUS": "a bus error: native code touched memory it does not own",
    "SIGABRT": "aborted: os.abort(), or native code that gave up",
    "SIGKILL": "killed outright: most often by the system running out of memory",
    "SIGFPE": "an arithmetic fault in native code",
    "SIGILL": "an illegal instruction in native code",
    "SIGTERM": "terminated by a signal",
}


def how_it_ended(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            return f"was killed by signal {-returncode}"
        why = SIGNAL_WORDS.get(name)
        return f"was killed by {name}" + (f" ({why})" if why else "")
    if returncode == CHANNEL_LOST:
        return "closed or took over the checker's report channel (a file descriptor it does not own)"
    return (f"exited with status {returncode} in the middle of the check "
            "(os._exit(), or something else that ends the whole process)")


def _crashed(job: Job, seed: int, stages: list[Stage], returncode: int | None, log, faults,
             garbled: bool = False) -> Report:
    how = how_it_ended(returncode)
    if garbled:
        how = f"wrote something that is not the checker's into its report channel, and {how}"
    return _verdict(job, seed, stages, log, faults, "crash", f"the process running your code {how}", "at")


def _worker_failed(job: Job, seed: int, why: str, log) -> Report:
    return _verdict(job, seed, [], log, None, "crash", why, "at")


_FRAME = re.compile(r'File "(.*)", line (\d+)')


def _user_frame(faults, path: Path) -> tuple[int | None, str]:
    """The innermost line of the user's file in faulthandler's dump (most recent call first)."""
    try:
        text = os.pread(faults.fileno(), 1 << 20, 0).decode("utf-8", "replace")
    except OSError:
        return None, ""
    target = str(Path(path).resolve())
    for m in _FRAME.finditer(text):
        if m.group(1) == target or m.group(1) == str(path):
            line = int(m.group(2))
            return line, _source_line(path, line)
    return None, ""


def _source_line(path: Path, line: int) -> str:
    """The text of a line, to show it (never to diagnose from)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, text in enumerate(f, 1):
                if n == line:
                    return sandbox.excerpt(text.strip())
    except OSError:
        pass
    return ""
