"""Check each file in a process of its own, watch the clock, and turn hangs and crashes into reports. No torch here.

Whatever the user's code does (loops forever, segfaults, calls os._exit, closes or scribbles on the
worker's report channel, leaves threads or children behind, sets itself free with setsid), each file
ends in one Report within its time limit, and nothing it did reaches the next file:

- one process per file, with its own report channel and its own empty scratch folder as its working
  directory. A batch forks them from a warm process that imported torch once (warm.py), one file alone
  gets a cold worker (spawn.py);
- each worker leads a process group of its own, killed when the file is done; the CLI is a child
  subreaper, so a grandchild that escaped with setsid is handed to us and killed too (orphans.py);
- a worker dies with the CLI (PR_SET_PDEATHSIG, set by the worker itself).
"""

from __future__ import annotations

import hmac
import json
import os
import random
import re
import secrets
import select
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from attn_drill import findings, limits
from attn_drill.i18n import t
from attn_drill.process import gpu, orphans, sandbox, warm
from attn_drill.process.spawn import STARTUP_LIMIT, kill, spawn_worker, stop
from attn_drill.process.worker import CHANNEL_LOST, signer  # the worker module imports no torch at its top
from attn_drill.report import STAGES, Report, Stage, partial_report

DEFAULT_TIMEOUT = 10.0  # seconds for one file's checks, once torch is imported, not counting waits for a CPU
LOADED = 6  # however loaded the machine, a check ends within this many timeouts of wall-clock time
MAX_LANES = 4  # warm servers a batch runs side by side, at most (one per core; ATTN_DRILL_LANES=n: at most n)


@dataclass
class Job:
    path: Path
    exercise: str
    task: str | None = None  # None: check the file; "explain": trace it, "maps": its weights, "gpu": the device
    # stage on a GPU (worker.run_task)
    imports_from: Path | None = None  # a folder whose modules the file may import besides its own (explain's
    # mutants, each in a folder of its own, import the original's helpers)


def run_checks(jobs: list[Job], *, seed: int | None = None, timeout: float = DEFAULT_TIMEOUT,
               spawn=None, on_gpu: bool = True) -> Iterator[Report]:
    """Check each job's file in a process of its own; yield one Report per job, in order.

    `spawn` starts that process; by default a cold worker for one file, and for several a child forked
    from warm processes (warm.WarmPool.spawn) that import torch once for the whole batch. Where a GPU is
    present (and `on_gpu`), a file that passed every CPU stage runs on it too (gpu.py)."""
    if seed is None:
        seed = random.randrange(10_000)
    orphans.become_subreaper()  # setsid'ed grandchildren come back to us, to be killed
    orphans.keep_private()  # our environment is ours: the checked code cannot read it in /proc
    if spawn is None and len(jobs) > 1 and warm.available():
        yield from _batch(jobs, seed, timeout, on_gpu)
        return
    for job in jobs:
        yield unparsable(job, seed) or checked(job, seed, timeout, spawn or spawn_worker, on_gpu)


def checked(job: Job, seed: int, timeout: float, spawn, on_gpu: bool = True) -> Report | dict:
    """check_one, with the device stage's GPU half beside it where there is a GPU (gpu.py): its own cold worker,
    started at once so that its torch import and the GPU's start-up overlap the CPU check. It is kept, and
    folded into the report, when the CPU check reached the device stage; cancelled (killed) otherwise."""
    if job.task or not on_gpu or gpu.device() is None:
        return check_one(job, seed, timeout, spawn)
    stop_r, stop_w = os.pipe()
    box: dict = {}

    def half() -> None:
        box["result"] = check_one(Job(job.path, job.exercise, task="gpu"), seed, timeout, spawn_worker, stop_r)

    thread = threading.Thread(target=half, name="attn-drill-gpu", daemon=True)
    thread.start()
    keep = False
    try:
        report = check_one(job, seed, timeout, spawn)
        keep = gpu.wanted(report)
        waited = time.monotonic()
        if keep:
            thread.join()
            gpu.fold(report, box.get("result"))
            report.seconds += time.monotonic() - waited
        return report
    finally:
        if not keep:
            os.write(stop_w, b"x")  # the GPU half's watcher kills its worker and returns
        thread.join()
        os.close(stop_r)
        os.close(stop_w)


def unparsable(job: Job, seed: int) -> Report | None:
    """The report of a file that cannot even be compiled (a syntax error, a bad encoding, nothing in it), made
    here with the judge's own load step: no worker, so no torch import, as fast as `watch`. None otherwise."""
    from attn_drill.judge import load

    start = time.perf_counter()
    try:
        bad = load.parse(Path(job.path), job.exercise)
    except Exception:  # noqa: BLE001 - unreadable in some way we did not foresee: the worker will say how
        return None
    if bad is None:
        return None
    report = partial_report(job.exercise, job.path, seed, [], bad.title)
    report.findings.append(bad)
    report.seconds = time.perf_counter() - start
    return report


def run_task(job: Job, seed: int, timeout: float = DEFAULT_TIMEOUT, spawn=None) -> dict | Report:
    """Run a job's task (job.task) on its file in a process of its own, as a check runs: its JSON result, or
    the Report of how that process failed (a timeout, a crash)."""
    orphans.become_subreaper()
    orphans.keep_private()
    return check_one(job, seed, timeout, spawn or spawn_worker)


def _batch(jobs: list[Job], seed: int, timeout: float, on_gpu: bool) -> Iterator[Report]:
    """Several files: a warm server per lane (a lane per core, up to 4), each forking one child per file;
    the lanes run side by side and the reports come out in the jobs' order."""
    import queue  # here: a single check never needs threads
    from concurrent.futures import ThreadPoolExecutor

    lanes = max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
                       _lanes_allowed(), len(jobs) // 4))
    pools = [warm.WarmPool(sorted({j.exercise for j in jobs})) for _ in range(lanes)]
    for pool in pools:
        pool.start()  # here, in the thread that lives longest: a server dies with the thread that started it
    free: queue.Queue = queue.Queue()
    for pool in pools:
        free.put(pool)

    def one(job: Job) -> Report:
        pool = free.get()
        try:
            return checked(job, seed, timeout, pool.spawn, on_gpu)
        finally:
            free.put(pool)

    with ThreadPoolExecutor(lanes, thread_name_prefix="attn-drill-lane") as lanes_:
        futures = [lanes_.submit(one, job) for job in jobs]
        try:
            for future in futures:
                yield future.result()
        finally:
            for future in futures:
                future.cancel()
            for pool in pools:
                pool.close()  # its server kills a child still running: a lane still waiting returns at once


def _lanes_allowed() -> int:
    """MAX_LANES, or fewer where ATTN_DRILL_LANES says so (a machine shared with other work; the test suite, whose
    workers already take a core each); a value that is not a whole number of 1 or more is ignored."""
    try:
        asked = int(os.environ.get("ATTN_DRILL_LANES", ""))
    except ValueError:
        return MAX_LANES
    return min(MAX_LANES, asked) if asked >= 1 else MAX_LANES


_live: set[int] = set()  # the processes of checks in progress, in every lane, and the warm servers
_live_lock = threading.Lock()


SCRATCH = "attn-drill-check-"
_swept = False


def sweep_scratch() -> None:
    """Once per CLI process: remove the scratch folders of checks whose CLI is gone (killed with SIGKILL, or by a
    closed terminal, it had no chance to remove its own). A folder whose pid still runs is left alone."""
    global _swept
    if _swept:
        return
    _swept = True
    root = Path(tempfile.gettempdir())
    try:
        names = [n for n in os.listdir(root) if n.startswith(SCRATCH)]
    except OSError:
        return
    for name in names:
        pid = name[len(SCRATCH):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        folder = root / name
        try:
            if folder.is_dir() and not folder.is_symlink() and folder.stat().st_uid == os.getuid():
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's: not ours to judge
    return True


def check_one(job: Job, seed: int, timeout: float, spawn, stop_fd: int | None = None) -> Report | dict | None:
    """One file in one fresh process: its report, or the verdict on how that process failed (a job with a task:
    the task's result, a dict, unless it failed). A byte on `stop_fd` cancels it: None."""
    known = orphans.children()  # ours before the check; any other child afterwards was adopted by us
    sweep_scratch()
    # the only folder its code may write to; named with our pid, so a later check can tell it was left behind
    scratch = tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-")
    read_fd, write_fd = os.pipe()
    log = tempfile.TemporaryFile()  # the user's prints, and a crash's last words
    faults = tempfile.TemporaryFile()  # faulthandler's Python stack on a segfault or just before a timeout
    path = Path(os.path.abspath(job.path))  # the worker runs in the scratch folder
    key = secrets.token_hex(16)  # signs the worker's events: see worker.signer
    spec = {"seed": seed, "fault_fd": faults.fileno(), "scratch": scratch, "key": key, "parent": os.getpid(),
            "jobs": [{"path": str(path), "exercise": job.exercise, **({"task": job.task} if job.task else {}),
                      **({"imports_from": os.path.abspath(job.imports_from)} if job.imports_from else {})}]}
    if job.task == "gpu":
        spec["gpu"] = gpu.device()  # this worker owns the GPU (spawn_worker leaves it visible)
    ooms = _oom_kills()
    proc, began = None, time.monotonic()
    try:
        with _live_lock:  # a child started now in another lane is not an orphan of this check
            proc = spawn(spec, (write_fd, faults.fileno()), log)
            _live.add(proc.pid)
            _live.update(_servers(spawn))
        os.close(write_fd)
        write_fd = None
        report = _watch(proc, _Lines(read_fd, signer(key), stop_fd), job, seed, timeout, log, faults, ooms)
        if isinstance(report, Report):
            report.file = str(job.path)
            # what the user waited, start and torch's import included: the worker's own clock starts when its
            # stages do, so a skeleton that fails at once read "0.00 s" after two seconds
            report.seconds = time.monotonic() - began
        return report
    finally:
        if write_fd is not None:
            os.close(write_fd)
        if proc is not None:
            kill(proc)  # a worker done with its file may still hold threads or children of the user's code
        with _live_lock:
            _live.discard(getattr(proc, "pid", None))
            orphans.kill_adopted(known | _live | _servers(spawn))
        os.close(read_fd)
        log.close()
        faults.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _watch(proc, reader, job: Job, seed: int, timeout: float, log, faults, ooms) -> Report | dict:
    """Read the worker's events until its report, a timeout, or its end."""
    started, stages, began, waited = False, [], 0.0, 0.0
    deadline = time.monotonic() + STARTUP_LIMIT
    while True:
        line = reader.next(deadline)
        if line is _CANCELLED:
            kill(proc)
            return None
        if line is _TIMEOUT:
            if not started:
                kill(proc)
                return _worker_failed(job, seed, "the checker did not start in time", log)
            now = time.monotonic()
            ran = now - began - (_cpu_wait(proc.pid) - waited)  # what an idle machine would have taken
            if ran < timeout and now - began < LOADED * timeout:
                deadline = now + max(timeout - ran, 0.05)  # a busy machine kept it waiting for a CPU: not its time
                continue
            _ask_for_stack(proc, faults)  # the verdict is a timeout already, whatever happens next
            kill(proc)
            return _timed_out(job, seed, stages, timeout, log, faults)
        event = _parse(line)
        if event is None:  # the worker is gone, or something else wrote into its channel
            killed = stop(proc)
            return _crashed(job, seed, stages, proc.returncode, log, faults, garbled=line is not None,
                            killed_by_us=killed, oom=_oom_kills() > ooms)
        kind = event["event"]
        if kind == "start":
            started, stages = True, []
            began, waited = time.monotonic(), _cpu_wait(proc.pid)
            deadline = began + timeout
        elif kind == "stage":
            stages.append(event["stage"])
        elif kind == "report":
            return event["report"]


def _cpu_wait(pid: int) -> float:
    """Seconds the process's main thread has spent ready to run but waiting for a CPU (Linux's schedstat): the
    time a loaded machine adds, which the timeout does not count. 0 where it cannot be read."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _servers(spawn) -> set[int]:
    """The warm server behind `spawn`, if any: it may have been (re)started during the check, and is ours."""
    pool = getattr(spawn, "__self__", None)
    return pool.pids() if isinstance(pool, warm.WarmPool) else set()


def _oom_kills() -> int:
    """How many processes the kernel's out-of-memory killer has killed since boot (Linux); 0 elsewhere."""
    try:
        with open("/proc/vmstat") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("oom_kill ")), 0)
    except (OSError, ValueError, IndexError):
        return 0


def _parse(line) -> dict | None:
    """An event from the worker, with its stage or report rebuilt; None for EOF or anything malformed."""
    if line is None:
        return None
    try:
        event = json.loads(line)
        kind = event["event"]
        if kind == "start":
            if event.get("index") != 0:
                return None
        elif kind == "stage":
            event["stage"] = Stage(**event["stage"])
        elif kind == "report" and "payload" in event:  # a task's result: plain JSON, kept as it is
            if not isinstance(event["payload"], dict):
                return None
            event["report"] = event["payload"]
        elif kind == "report":
            event["report"] = Report.from_wire(event["report"])
        else:
            return None
        return event
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


_TIMEOUT, _CANCELLED = object(), object()


class _Lines:
    """Read the worker's signed lines from a pipe with a deadline. A line without the right signature is
    not the worker's: it comes back as "" (garbage), which ends the check as a crash."""

    def __init__(self, fd: int, sign, stop_fd: int | None = None):
        self.fd, self.buf, self.sign = fd, b"", sign
        self.watched = [fd] if stop_fd is None else [fd, stop_fd]  # a byte on stop_fd: _CANCELLED

    def next(self, deadline: float):
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return _TIMEOUT
            ready, _, _ = select.select(self.watched, [], [], left)
            if not ready:
                return _TIMEOUT
            if self.fd not in ready:
                return _CANCELLED
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\n", 1)
        mac, _, line = raw.decode("utf-8", "replace").partition(" ")
        return line if hmac.compare_digest(mac, self.sign(line)) else ""


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


def _verdict(job: Job, seed: int, stages: list[Stage], log, faults, slug: str, detail: str, said: str,
             stage_detail: str | None = None, **params):
    """A report the worker could not send: the stages it did, the next one failed, one finding naming the user's
    line from faulthandler's dump where there is one, and what the code printed."""
    report = partial_report(job.exercise, job.path, seed, stages, stage_detail or detail)
    line, text = _user_frame(faults, job.path) if faults is not None else (None, "")
    at = "\n    " + t(f"evidence.process.runner.{said}", line=line, text=text) if line else ""
    report.findings.append(findings.make(slug, detail + at, line=line, score=1.0, **params))
    report.output = sandbox.read_excerpt(log.fileno())
    return report


def _timed_out(job: Job, seed: int, stages: list[Stage], timeout: float, log, faults) -> Report:
    stage = next((n for n in STAGES if n not in {s.name for s in stages}), "device")
    what = t("evidence.process.runner.code_was") if job.task else \
        t("evidence.process.runner.stage_was", stage=t(f"report.stage.{stage}"))  # a task has no stages
    return _verdict(job, seed, stages, log, faults, "timeout",
                    t("evidence.process.runner.still_running", what=what, timeout=f"{timeout:g}"), "it_was_at",
                    stage_detail=t("evidence.process.runner.did_not_finish", timeout=f"{timeout:g}"),
                    seconds=f"{timeout:g}")


# The signals whose meaning is said in words (evidence.process.signals.<name>)
SIGNAL_WORDS = ("SIGSEGV", "SIGBUS", "SIGABRT", "SIGFPE", "SIGILL", "SIGTERM")


def how_it_ended(returncode: int | None, killed_by_us: bool = False, oom: bool = False) -> str:
    """What is known of a worker's end, in words: never a guess at a cause that was not seen."""
    said = "evidence.process.runner."
    if killed_by_us:
        return t(said + "killed_by_us")
    if returncode is None:
        return t(said + "stopped_answering")
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            return t(said + "killed_by_number", number=-returncode)
        if name == "SIGKILL":
            return t(said + ("oom" if oom else "sigkill"))
        if name in SIGNAL_WORDS:
            return t(said + "killed_by_why", name=name, why=t(f"evidence.process.signals.{name}"))
        return t(said + "killed_by", name=name)
    if returncode == CHANNEL_LOST:
        return t(said + "channel_lost")
    return t(said + "exited", status=returncode)


def _crashed(job: Job, seed: int, stages: list[Stage], returncode: int | None, log, faults,
             garbled: bool = False, killed_by_us: bool = False, oom: bool = False) -> Report:
    how = how_it_ended(returncode, killed_by_us, oom)
    if garbled:
        how = t("evidence.process.runner.garbled", how=how)
    return _verdict(job, seed, stages, log, faults, "crash", t("evidence.process.runner.crashed", how=how), "at")


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
                    return limits.excerpt(text.strip())
    except OSError:
        pass
    return ""
