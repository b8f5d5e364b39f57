"""watch: noticing saves (the folder's entry, debounced), the warm worker (a fresh process per check, the
same verdicts as a cold worker, hangs and hostile files), and the command in a real terminal."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import attn_drill_script

from attn_drill import catalogue
from attn_drill.store import history, state
from attn_drill.process import landlock, runner, warm
from attn_drill.practice.watch import Checker, Watcher, signature

CORPUS = Path(__file__).parent / "corpus"
SDPA = catalogue.get("sdpa")
needs_warm = pytest.mark.skipif(not warm.available(), reason="no fork or SOCK_SEQPACKET here")


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def replace(path: Path, text: str) -> None:
    """Save as many editors do: a new file renamed over the old one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# -- noticing saves ----------------------------------------------------------------------------------
def test_a_save_is_reported_once_it_has_settled(isolated):
    f, clock = isolated / "sdpa.py", FakeClock()
    f.write_text("one")
    w = Watcher(f, debounce=0.05, clock=clock)
    w.checked = signature(f)  # already checked
    assert w.poll() is None
    assert w._settle_wait(0.05) == 0.05  # nothing pending: the full poll interval
    f.write_text("two, longer")
    assert w.poll() is None  # just changed: not settled yet
    clock.t += 0.03
    assert w.poll() is None
    assert abs(w._settle_wait(0.05) - 0.02) < 1e-9  # look again just when the debounce ends
    f.write_text("three, longer still")  # a second write restarts the wait
    assert w.poll() is None
    clock.t += 0.03
    assert w.poll() is None
    clock.t += 0.03
    assert w.poll() == signature(f)  # settled: one check for both writes
    clock.t += 1
    assert w.poll() is None  # and only once


def test_a_replace_with_the_same_size_and_time_is_a_save(isolated):
    f, clock = isolated / "sdpa.py", FakeClock()
    f.write_text("aaaa")
    w = Watcher(f, debounce=0.05, clock=clock)
    w.checked = signature(f)
    st = f.stat()
    replace(f, "bbbb")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # only the inode tells them apart
    assert w.poll() is None
    clock.t += 0.1
    assert w.poll() is not None


def test_a_missing_file_waits_and_other_files_are_ignored(isolated):
    f, clock = isolated / "sdpa.py", FakeClock()
    f.write_text("x")
    w = Watcher(f, debounce=0.05, clock=clock)
    w.checked = signature(f)
    (isolated / "mha.py").write_text("another exercise")  # same folder, not ours
    clock.t += 1
    assert w.poll() is None
    f.unlink()
    assert w.poll() is None and w.missing
    clock.t += 1
    assert w.poll() is None
    f.write_text("back")
    clock.t += 0.01
    assert w.poll() is None and not w.missing
    clock.t += 0.1
    assert w.poll() == signature(f)


def test_changes_yields_the_file_as_it_is_first(isolated):
    f = isolated / "sdpa.py"
    f.write_text("x")
    assert next(Watcher(f).changes(poll=0.01)) == signature(f)


# -- the warm worker ---------------------------------------------------------------------------------
LEAK = """
import builtins
builtins.attn_drill_checks_seen = getattr(builtins, "attn_drill_checks_seen", 0) + 1
if builtins.attn_drill_checks_seen > 1:
    raise RuntimeError("this process has run my file before")
"""


@needs_warm
def test_every_check_runs_in_a_fresh_process(isolated):
    f = isolated / "sdpa.py"
    f.write_text(SDPA.reference.read_text() + LEAK)
    twice = subprocess.run([sys.executable, "-c", f"import runpy; runpy.run_path({str(f)!r}); runpy.run_path({str(f)!r})"],
                           capture_output=True, text=True)
    assert "has run my file before" in twice.stderr  # proves the file can tell
    cold = list(runner.run_checks([runner.Job(f, "sdpa")] * 2, seed=0))  # a batch: a process per file too
    assert [r.passed for r in cold] == [True, True]
    with Checker("sdpa", seed=0) as checker:
        reports = [checker.check(f) for _ in range(3)]
    assert [r.passed for r in reports] == [True] * 3, [r.findings for r in reports]


CASES = ["ok__manual_softmax.py", "missing-scale__no_div.py", "mask-inverted__where_swapped.py",
         "crash__os_exit.py", "crash__segfault.py", "syntax-error__missing_colon.py",
         "torch-modified__patch_allclose.py", "timeout__forgot_increment.py"]


@needs_warm
def test_warm_and_cold_workers_give_the_same_verdicts():
    files = [CORPUS / "sdpa" / name for name in CASES if (CORPUS / "sdpa" / name).exists()]
    assert len(files) >= 6
    jobs = [runner.Job(f, "sdpa") for f in files]

    def verdicts(reports):
        return {Path(r.file).name: (r.passed, [f.slug for f in r.findings]) for r in reports}

    cold = verdicts(runner.run_checks(jobs, seed=5, timeout=3))
    with warm.WarmPool(["sdpa"]) as pool:
        hot = verdicts(runner.run_checks(jobs, seed=5, timeout=3, spawn=pool.spawn))
        assert pool.ready and not pool.failed  # no silent fall-back to cold workers
    assert hot == cold
    for name, (passed, slugs) in hot.items():
        expected = name.split("__")[0]
        assert passed if expected == "ok" else slugs[0] == expected, (name, slugs)


KILL_PARENT = """
import os, signal
if os.getppid() != {test_pid}:  # never the test process itself, were the check to run cold
    os.kill(os.getppid(), signal.SIGKILL)
"""


@needs_warm
def test_a_hang_times_out_and_a_file_that_kills_the_server_costs_only_speed(isolated):
    hang = CORPUS / "sdpa" / "timeout__forgot_increment.py"
    killer = isolated / "sdpa.py"
    killer.write_text(SDPA.reference.read_text() + KILL_PARENT.format(test_pid=os.getpid()))
    with Checker("sdpa", seed=0, timeout=1.5) as checker:
        t = time.monotonic()
        rep = checker.check(hang)
        # a hang guard, not a speed test: the clock may run to LOADED times the limit on a busy machine
        assert rep.findings[0].slug == "timeout" and time.monotonic() - t < runner.LOADED * 1.5 + 60
        assert checker.check(SDPA.reference).passed  # the server survived the kill of its child
        first_server = checker.pool.proc.pid
        rep = checker.check(killer)
        if landlock.abi() >= 6:  # signals out of the check are refused: the server lives on
            assert rep.findings[0].slug == "exception" and "PermissionError" in rep.findings[0].evidence
            assert checker.check(SDPA.reference).passed and checker.pool.proc.pid == first_server
            return
        assert rep.passed  # the report came even though the server died
        assert checker.check(SDPA.reference).passed  # and a new server took over
        assert checker.pool.proc.pid != first_server and not checker.pool.failed


ORPHAN = """
import os, sys, tempfile
from pathlib import Path
from attn_drill.process import warm
pool = warm.WarmPool([])
assert pool.wait_ready()
read_fd, write_fd = os.pipe()
log, faults = tempfile.TemporaryFile(), tempfile.TemporaryFile()
spec = {{"seed": 0, "fault_fd": faults.fileno(), "jobs": [{{"path": {path!r}, "exercise": "sdpa"}}]}}
child = pool.spawn(spec, (write_fd, faults.fileno()), log)
os.read(read_fd, 100)  # the child has started
print(child.pid, pool.proc.pid, "torch" in sys.modules, flush=True)
os._exit(0)  # the CLI dies mid-check, with no clean-up
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie waiting for a reaper is gone for our purposes


@needs_warm
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_when_the_cli_dies_the_server_kills_the_running_check_and_exits():
    hang = CORPUS / "sdpa" / "timeout__forgot_increment.py"
    r = subprocess.run([sys.executable, "-c", ORPHAN.format(path=str(hang))], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    child, server, cli_had_torch = r.stdout.split()
    assert cli_had_torch == "False"  # the CLI side never imports torch
    deadline = time.monotonic() + 10
    while (alive(int(child)) or alive(int(server))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(int(child)) and not alive(int(server))


def test_without_a_warm_server_checks_still_run_cold(isolated, monkeypatch):
    monkeypatch.setattr(warm, "available", lambda: False)
    with Checker("sdpa", seed=0) as checker:
        assert checker.check(SDPA.reference).passed
        assert checker.pool.failed and checker.pool.proc is None


# -- the command --------------------------------------------------------------------------------------
def test_watch_needs_a_started_exercise(run_script):
    r = run_script("watch")
    assert r.returncode == 2 and "no exercise started" in r.stderr


@needs_warm
def test_watch_in_a_terminal_rechecks_on_save_and_stops_on_ctrl_c(isolated, run_script):
    pexpect = pytest.importorskip("pexpect")
    assert run_script("start", "sdpa").returncode == 0
    practice = isolated / "attn-practice" / "sdpa.py"
    child = pexpect.spawn(attn_drill_script(), ["watch"], cwd=str(isolated), env=dict(os.environ),
                          encoding="utf-8", timeout=120, dimensions=(50, 120))
    try:
        child.expect("NOT STARTED")  # the skeleton, checked as it stands
        child.expect("save to check again")
        (isolated / "attn-practice" / "mha.py").write_text("another exercise's file: not watched")
        with pytest.raises(pexpect.TIMEOUT):
            child.expect(["FAILED", "PASSED"], timeout=1.0)
        replace(practice, SDPA.reference.read_text())
        child.expect("PASSED", timeout=30)
        child.expect("Solved in")
        child.expect(f"1 of {len(catalogue.exercises())} passed. Next: softmax")  # the line that moves you on
        child.sendintr()
        child.expect("Stopped watching")
        child.expect(pexpect.EOF, timeout=30)
    finally:
        child.close()
    assert child.exitstatus == 0
    rows = history.checks("sdpa")
    assert [(r["passed"], r["source"]) for r in rows] == [(True, "watch")]  # the skeleton: not started, not kept
    assert rows[0]["solve_seconds"] is not None and rows[0]["attempt"] == state.load().started_at("sdpa")
    assert practice.read_text() == SDPA.reference.read_text()  # watching never writes the file


HANG = """
import time
open("looping", "w").close()  # in the check's scratch folder: the test sees that the check has started
while True:
    time.sleep(0.05)
"""


def looping(pids) -> list[int]:
    """The processes among `pids` whose working folder holds the hanging file's marker."""
    found = []
    for p in pids:
        try:
            if (Path(os.readlink(f"/proc/{p}/cwd")) / "looping").exists():
                found.append(p)
        except OSError:
            pass
    return found


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`, from /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and alive(int(entry.name)):
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = {c for c, parent in parents.items() if parent == p}
        todo += list(kids - found)
        found |= kids
    return found


def read_until(proc, text: str, seen: list, limit: float = 180) -> None:
    """Read proc's stdout lines into `seen` until one holds `text` (a generous limit: no timing margin)."""
    import os
    import select

    fd = proc.stdout.fileno()  # read the pipe itself: a buffered readline can hold lines select() no longer sees
    partial = _PARTIAL.setdefault(proc.pid, [b""])
    deadline = time.monotonic() + limit
    while not any(text in line for line in seen):
        assert time.monotonic() < deadline, f"no {text!r} in {seen}"
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if ready:
            chunk = os.read(fd, 65536)
            assert chunk, f"watch ended before {text!r}: {seen}"
            *lines, partial[0] = (partial[0] + chunk).split(b"\n")
            seen += [line.decode("utf-8", "replace") + "\n" for line in lines]


_PARTIAL: dict = {}  # pid -> the bytes of a line not ended yet


@needs_warm
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_save_cancels_a_hanging_check_and_leaves_no_process(isolated, run_script):
    assert run_script("start", "sdpa").returncode == 0
    practice = isolated / "attn-practice" / "sdpa.py"
    replace(practice, HANG)
    proc = subprocess.Popen([attn_drill_script(), "watch", "--timeout", "3600"], cwd=isolated, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen: list[str] = []
    try:
        read_until(proc, "checking attn-practice/sdpa.py…", seen)
        deadline = time.monotonic() + 120  # the hanging check runs the file: its marker is there
        while not looping(descendants(proc.pid)):
            assert time.monotonic() < deadline, seen
            time.sleep(0.05)
        hanging = looping(descendants(proc.pid))
        replace(practice, SDPA.reference.read_text())
        read_until(proc, "saved again: the running check is stopped; checking…", seen)
        read_until(proc, "PASSED", seen)  # with a 3600 s limit, only a cancelled hang lets this come
        read_until(proc, "save to check again", seen)  # recorded by now
        assert not any("timeout" in line for line in seen)
        assert not [p for p in hanging if alive(p)]  # the hanging check is gone
    finally:
        proc.send_signal(2)  # Ctrl-C
        out, _ = proc.communicate(timeout=60)
    assert "Stopped watching" in out and proc.returncode == 0
    rows = history.checks("sdpa")
    assert [(r["passed"], r["source"]) for r in rows] == [(True, "watch")]  # the cancelled check is not recorded


@needs_warm
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_file_deleted_during_a_watched_check_leaves_no_process_and_the_next_save_is_checked(isolated, run_script):
    assert run_script("start", "sdpa").returncode == 0
    practice = isolated / "attn-practice" / "sdpa.py"
    replace(practice, HANG)
    proc = subprocess.Popen([attn_drill_script(), "watch", "--timeout", "3600"], cwd=isolated, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen: list[str] = []
    try:
        read_until(proc, "checking attn-practice/sdpa.py…", seen)
        deadline = time.monotonic() + 120
        while not looping(descendants(proc.pid)):
            assert time.monotonic() < deadline, seen
            time.sleep(0.05)
        hanging = looping(descendants(proc.pid))
        practice.unlink()
        read_until(proc, "sdpa.py is gone; the running check is stopped; waiting for it to come back", seen)
        deadline = time.monotonic() + 120
        while [p for p in hanging if alive(p)]:  # the running check of a file that is gone is stopped
            assert time.monotonic() < deadline, seen
            time.sleep(0.1)
        replace(practice, SDPA.reference.read_text())
        read_until(proc, "PASSED", seen)  # the next save is checked, and only a stopped hang lets it come
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=60)


@pytest.mark.parametrize("value, lanes", [("", runner.MAX_LANES), ("1", 1), ("2", 2), ("99", runner.MAX_LANES),
                                          ("0", runner.MAX_LANES), ("-3", runner.MAX_LANES),
                                          ("two", runner.MAX_LANES)])
def test_attn_drill_lanes_is_read_as_the_cap_on_a_batchs_lanes(monkeypatch, value, lanes):
    """A machine shared with other work (the test suite's own workers) asks a batch for fewer lanes: the cap
    _batch takes its lane count under; a value that is no whole number of 1 or more leaves the default."""
    monkeypatch.setenv("ATTN_DRILL_LANES", value)
    assert runner._lanes_allowed() == lanes
