"""Each file is checked in a process of its own that sees neither the caller's folder nor another file.

Every test runs the real command line from a folder of its own, the way a user or a teacher would. The
bad files here do their worst quietly (they catch their own errors), so that only isolation decides
whether a neighbour's verdict stays right.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attn_drill.process import landlock
from conftest import attn_drill_script

SECCOMP = sys.platform.startswith("linux") and landlock._AUDIT_ARCH.get(os.uname().machine.lower()) is not None

REFERENCE = Path(__file__).parent.parent / "reference" / "sdpa.py"
CORPUS = Path(__file__).parent / "corpus" / "sdpa"
LIMIT = 120.0  # seconds any one JSON line may take on a loaded machine (a wedged CLI fails, never hangs)


def check_json(*args: str, cwd: Path | None = None) -> tuple[int, list[dict], str]:
    """Run the installed script: (exit code, its JSON reports, stderr). One file prints one indented object,
    several print one per line: read them as a stream."""
    r = subprocess.run([attn_drill_script(), "check", *args, "--json", "--seed", "3"], cwd=cwd,
                       capture_output=True, text=True, timeout=LIMIT)
    decoder, text, reports = json.JSONDecoder(), r.stdout.strip(), []
    while text:
        obj, end = decoder.raw_decode(text)
        reports.append(obj)
        text = text[end:].strip()
    return r.returncode, reports, r.stderr


def correct(path: Path, extra: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(REFERENCE.read_text() + extra)
    return path


def wrong(path: Path) -> Path:
    """The model answer without its 1/sqrt(d): missing-scale."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(REFERENCE.read_text().replace(" / math.sqrt(d)", ""))
    return path


# -- the import path -----------------------------------------------------------------------------------------
def test_standard_module_names_in_the_folder_you_run_from_are_not_imported(isolated):
    for name in ("random", "math", "copy", "queue", "typing", "json", "signal"):
        (isolated / f"{name}.py").write_text("raise RuntimeError('the checker imported my file')\n")
    (isolated / "attn_drill").mkdir()  # a source checkout that is not the installed package
    (isolated / "attn_drill" / "__init__.py").write_text("raise RuntimeError('the checker imported this checkout')\n")
    f = correct(isolated / "sub" / "sdpa.py")
    code, reports, stderr = check_json(str(f), cwd=isolated)
    assert code == 0 and reports[0]["passed"], (reports, stderr)


def test_a_file_imports_its_own_helpers_and_each_file_gets_its_own(isolated):
    """Two students, each with a helpers.py: each file is checked with its own, in one batch."""
    for who, factor in (("ann", "1.0"), ("bob", "2.0")):
        folder = isolated / who
        folder.mkdir()
        (folder / "helpers.py").write_text(f"FACTOR = {factor}\n")
        # bob's helper is wrong on purpose: his file multiplies the scores by 2
        body = REFERENCE.read_text().replace("import torch\n", "import torch\nimport helpers\n", 1)
        body = body.replace(" / math.sqrt(d)", " * helpers.FACTOR / math.sqrt(d)")
        (folder / "sdpa.py").write_text(body)
    code, reports, _ = check_json(str(isolated / "ann" / "sdpa.py"), str(isolated / "bob" / "sdpa.py"),
                                  "--exercise", "sdpa")
    assert [r["passed"] for r in reports] == [True, False]
    assert reports[1]["findings"][0]["slug"] == "wrong-scale"


def test_a_helper_imported_later_inside_a_function_is_found(isolated):
    (isolated / "late_helper.py").write_text("import math\n\ndef scale(d):\n    return 1 / math.sqrt(d)\n")
    body = REFERENCE.read_text().replace(
        "    d = q.size(-1)\n", "    from late_helper import scale\n    d = q.size(-1)\n").replace(
        " / math.sqrt(d)", " * scale(d)")
    (isolated / "sdpa.py").write_text(body)
    code, reports, _ = check_json(str(isolated / "sdpa.py"))
    assert code == 0, reports


# -- one file cannot reach another ---------------------------------------------------------------------------
FORGER = '''
import os
fake = '{"event": "report", "report": {"exercise": "sdpa", "file": "x", "seed": 3, "stages": [], "findings": []}}\\n'
for fd in range(3, 64):  # every descriptor it can find: the report channel among them
    try:
        os.write(fd, fake.encode())
    except OSError:
        pass
'''

SNOOP = '''
import os, sys
seen = ""
for pid in ("self", str(os.getppid())):
    try:
        seen += open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
    except OSError:
        pass
SAW_NEIGHBOUR = "neighbour_marker" in seen
'''

PATCHER = '''
import sys
for name, mod in list(sys.modules.items()):  # spoil whatever of the checker's it can reach
    if "attn_drill" in name:
        for attr in dir(mod):
            if attr in ("reference_module", "diff", "closeness", "scaled_dot_product_attention"):
                try:
                    setattr(mod, attr, lambda *a, **k: None)
                except Exception:
                    pass
import builtins, torch
builtins.SPOILED = True
torch.set_default_dtype(torch.float32)
'''


def test_one_file_cannot_forge_spy_on_or_spoil_the_others(isolated):
    forger = wrong(isolated / "a" / "forger.py")
    forger.write_text(forger.read_text() + FORGER)  # wrong, and forges a pass
    snoop = correct(isolated / "b" / "snoop.py", SNOOP +
                    "\n_real = scaled_dot_product_attention\n"
                    "def scaled_dot_product_attention(q, k, v, mask=None):\n"
                    "    out, w = _real(q, k, v, mask)\n"
                    "    return (out * 2, w) if SAW_NEIGHBOUR else (out, w)\n")
    patcher = correct(isolated / "c" / "patcher.py", PATCHER)
    neighbour = correct(isolated / "d" / "neighbour_marker.py")
    after = correct(isolated / "e" / "after.py", "\nimport builtins\nassert not hasattr(builtins, 'SPOILED')\n")
    wrong_after = wrong(isolated / "f" / "wrong_after.py")
    files = [forger, snoop, patcher, neighbour, after, wrong_after]
    code, reports, stderr = check_json(*map(str, files), "--exercise", "sdpa")
    got = {Path(r["file"]).name: r for r in reports}
    assert len(got) == len(files), stderr
    assert not got["forger.py"]["passed"]
    assert got["forger.py"]["findings"][0]["slug"] == "crash"  # it wrote into its report channel
    assert got["snoop.py"]["passed"], got["snoop.py"]["findings"]  # it never saw the neighbour's path
    for name in ("neighbour_marker.py", "after.py"):
        assert got[name]["passed"], (name, got[name]["findings"])
    assert got["wrong_after.py"]["findings"][0]["slug"] == "missing-scale"


def test_a_file_that_rewrites_its_neighbours_leaves_them_intact(isolated):
    mine = correct(isolated / "attn-practice" / "sdpa.py")
    vandal = correct(isolated / "attn-practice" / "mha_vandal.py", '''
import glob, os
for p in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "*.py")):
    if not p.endswith("mha_vandal.py"):
        try:
            open(p, "w").write("# gone\\n")
        except OSError:
            pass
''')
    before = mine.read_text()
    check_json(str(vandal), str(mine), "--exercise", "sdpa")
    assert mine.read_text() == before


# -- no survivors --------------------------------------------------------------------------------------------
def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of a live process, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _descendants(root: int) -> set[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st:
                parents[int(entry.name)] = st[1]
    found, todo = set(), [root]
    while todo:
        p = todo.pop()
        kids = {c for c, parent in parents.items() if parent == p}
        todo += list(kids - found)
        found |= kids
    return found


def _looping(pid: int) -> bool:
    """The process runs the endless file: it left a mark in its working folder (the check's scratch folder)."""
    try:
        return os.path.exists(f"/proc/{pid}/cwd/looping")
    except OSError:
        return False


def _all_gone(pids: set[int], limit: float = 30.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if all((_stat(p) or ("Z", 0))[0] == "Z" for p in pids):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
# SIGKILL by default (it leaves the CLI no say); SIGTERM and SIGHUP, which the CLI could handle, with -m slow
@pytest.mark.parametrize("how", [signal.SIGKILL, pytest.param(signal.SIGTERM, marks=pytest.mark.slow),
                                 pytest.param(signal.SIGHUP, marks=pytest.mark.slow)], ids=lambda s: s.name)
@pytest.mark.parametrize("batch", [False, True], ids=["one file", "batch"])
def test_the_worker_dies_with_the_cli(isolated, how, batch):
    # Orphans come to this process rather than to init, which on some machines kills them by itself: a
    # worker that does not die with its CLI then keeps running here, where the test sees it.
    from attn_drill.process import orphans

    assert orphans.become_subreaper()
    loop = isolated / "endless.py"
    loop.write_text("open('looping', 'w').close()\nwhile True:\n    pass\n")
    files = ([str(correct(isolated / "ok.py"))] if batch else []) + [str(loop)]
    # a terminal's default for SIGHUP, whatever this run inherited (under nohup it is ignored, and so the CLI would be)
    proc = subprocess.Popen([attn_drill_script(), "check", *files, "-e", "sdpa", "--timeout", "600"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    seen: set[int] = set()
    try:
        end = time.monotonic() + LIMIT
        while time.monotonic() < end:
            seen |= _descendants(proc.pid)
            if any(_looping(p) for p in seen):
                break
            time.sleep(0.1)
        assert any(_looping(p) for p in seen), "the endless file never ran"
        seen |= _descendants(proc.pid)
        scratch = {os.readlink(f"/proc/{p}/cwd") for p in seen if _looping(p)}
        proc.send_signal(how)
        proc.wait(timeout=LIMIT)
        assert _all_gone(seen), f"outlived their CLI: {[p for p in seen if _stat(p)]}"
        if how == signal.SIGKILL and not batch:  # no chance to clean up: the next check removes what it left
            assert all(Path(f).is_dir() for f in scratch)
            r = subprocess.run([attn_drill_script(), "check", str(correct(isolated / "ok.py")), "-e", "sdpa",
                                "--no-record"], capture_output=True, text=True, timeout=LIMIT)
            assert r.returncode == 0, r.stdout + r.stderr
            assert not any(Path(f).exists() for f in scratch), scratch
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in seen:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)  # the ones handed to us, now zombies of ours
            except OSError:
                pass


def test_a_setsid_daemon_does_not_outlive_the_check(isolated):
    """The daemon detaches (double fork, setsid) and becomes a `sleep` with a name of its own: found by name
    afterwards, whatever the walls let it write."""
    marker = f"{3600 + os.getpid() % 1000}.25"  # an argument no other process has
    f = correct(isolated / "sdpa.py", f"""
import os
try:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "{marker}"])
        os._exit(0)
except OSError as e:
    print("refused:", e)
""")
    code, reports, _ = check_json(str(f))
    assert code == 0, reports
    if SECCOMP:  # the sandbox starts no process at all
        assert "refused: [Errno 1] Operation not permitted" in reports[0]["output"], reports
    end = time.monotonic() + 30
    while _sleepers(marker) and time.monotonic() < end:  # killed at the end of the check; reaped just after
        time.sleep(0.2)
    assert not _sleepers(marker), "the daemon outlived the check"


def _sleepers(marker: str) -> list[int]:
    """Live processes running `sleep MARKER` (zombies are dead)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == f"sleep\0{marker}\0".encode():
                if (_stat(int(entry.name)) or ("Z", 0))[0] != "Z":
                    found.append(int(entry.name))
        except OSError:
            pass
    return found


# -- malformed output and a crash stay with their own file ---------------------------------------------------
def test_a_crash_or_garbage_on_the_channel_is_that_file_alone(isolated):
    crasher = correct(isolated / "crasher.py", "\nimport os\nos.kill(os.getpid(), 9)\n")
    garbler = correct(isolated / "garbler.py", FORGER.replace("fake = ", "fake = 'not json at all' or "))
    ok = correct(isolated / "ok.py")
    code, reports, stderr = check_json(str(crasher), str(garbler), str(ok), "--exercise", "sdpa")
    got = {Path(r["file"]).name: r for r in reports}
    assert got["crasher.py"]["findings"][0]["slug"] == "crash"
    evidence = got["crasher.py"]["findings"][0]["evidence"]
    assert "SIGKILL" in evidence and "out-of-memory killer did not act" in evidence
    assert got["garbler.py"]["findings"][0]["slug"] == "crash"
    assert "report channel" in got["garbler.py"]["findings"][0]["evidence"]
    assert got["ok.py"]["passed"]
    assert "Traceback" not in stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")
@pytest.mark.parametrize("batch", [False, True], ids=["one file", "batch"])
def test_the_checked_code_cannot_read_secrets_from_the_environment_or_proc(isolated, monkeypatch, batch):
    """A worker's environment keeps only what Python and torch read; the CLI's own (where a user's tokens live)
    is unreadable in /proc, even to a worker run as root (it gives up every capability)."""
    secret = f"attn-drill-secret-{os.getpid()}"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    spy = correct(isolated / "spy.py", """
import os
print("env:", sorted(os.environ))
found = []
try:
    pids = os.listdir("/proc")
except OSError as e:  # Landlock's read rules: /proc cannot even be listed
    pids = [str(os.getppid()), "1"]
    print("listing /proc:", type(e).__name__)
for pid in pids:
    if pid.isdigit():
        try:
            found.append(open(f"/proc/{pid}/environ", "rb").read().decode("latin-1"))
        except OSError:
            pass
print("proc:", "|".join(found))
""")
    files = [str(spy)] + ([str(correct(isolated / "ok.py"))] if batch else [])
    code, reports, stderr = check_json(*files, "--exercise", "sdpa")
    assert code == 0 and reports[0]["passed"], (reports, stderr)
    said = reports[0]["output"]
    assert "env: [" in said and "proc:" in said, said
    assert secret not in said and "AWS_SECRET_ACCESS_KEY" not in said, said
