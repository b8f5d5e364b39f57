"""Every test gets its own attn-drill home and its own working folder, so no test sees another's
progress or files, and none touches the real user's."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest


def pytest_configure(config):
    """A test suite started as a background job (`pytest &` from a script) inherits SIGINT and SIGQUIT ignored,
    and so would every CLI the tests start: Ctrl-C sent to `watch` or `mock` in a terminal would do nothing.
    A handler of our own here means exec'd children start with the default again."""
    import signal

    for sig, handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGQUIT, signal.SIG_DFL)):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, handler)


@pytest.fixture(autouse=True, scope="session")
def session_home(tmp_path_factory: pytest.TempPathFactory):
    """Before any fixture of a wider scope than a test's (a module's batch of checks) runs: a home of the
    session's own, never the real user's, and no GPU half (test_gpu.py asks for it). `isolated` then gives
    each test its own."""
    saved = {name: os.environ.get(name) for name in ("ATTN_DRILL_HOME", "ATTN_DRILL_GPU", "ATTN_DRILL_LANG",
                                                    "ATTN_DRILL_LANES")}
    os.environ["ATTN_DRILL_HOME"] = str(tmp_path_factory.mktemp("session-home"))
    os.environ["ATTN_DRILL_GPU"] = "off"
    os.environ["ATTN_DRILL_LANG"] = "en"  # English whatever the machine's locale (test_i18n.py asks for zh)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # pytest-xdist runs a worker per core already: a batch's second lane
        os.environ["ATTN_DRILL_LANES"] = "1"  # would only add a torch import and compete with the other workers
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def fresh_warnings():
    """A warning is printed once per kind per command, and the language is chosen once: each test is a new
    command."""
    from attn_drill import i18n, say

    say.reset_warnings()
    i18n.reset()


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("ATTN_DRILL_HOME", str(home))
    # no GPU half of the device stage (process/gpu.py) unless a test asks for it: test_gpu.py does, with a
    # real GPU where there is one and on the CPU where not
    monkeypatch.setenv("ATTN_DRILL_GPU", "off")
    monkeypatch.setenv("ATTN_DRILL_LANG", "en")
    monkeypatch.setenv("NO_COLOR", "1")  # plain text to assert on; subprocesses inherit it
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def home() -> Path:
    return Path(os.environ["ATTN_DRILL_HOME"])


def attn_drill_script() -> str:
    """The installed console script next to this python (else on PATH); the test fails without one."""
    here = Path(sys.executable).parent / ("attn-drill.exe" if os.name == "nt" else "attn-drill")
    found = str(here) if here.exists() else shutil.which("attn-drill")
    assert found, "the attn-drill script is not installed: pip install -e ."
    return found


@pytest.fixture
def run_script():
    """Run the installed `attn-drill` for real: run_script("list") -> CompletedProcess."""

    def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([attn_drill_script(), *args], capture_output=True, text=True, timeout=timeout)

    return run


@pytest.fixture
def run_module():
    """Run `python -m attn_drill` for real."""

    def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "attn_drill", *args], capture_output=True, text=True,
                              timeout=timeout)

    return run


def run_json_lines(args: list[str], line_limit: float) -> tuple[int, list[tuple[dict, float]], str, float]:
    """Run the installed script: (exit code, its JSON lines each with the seconds since the previous one or the
    start, stderr, total seconds). A line that takes longer than `line_limit` fails the test and kills the process:
    a wedged CLI, the very failure these runs look for, never stalls the suite."""
    start = last = time.monotonic()
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: stderr can never fill up and block the CLI
        proc = subprocess.Popen([attn_drill_script(), *args], stdout=subprocess.PIPE, stderr=err)
        lines, buf = [], b""
        try:
            while True:
                if b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    now = time.monotonic()
                    lines.append((json.loads(line), now - last))
                    last = now
                    continue
                ready, _, _ = select.select([proc.stdout], [], [], max(0.0, last + line_limit - time.monotonic()))
                if not ready:
                    pytest.fail(f"attn-drill {' '.join(args[:2])}...: no line for {line_limit:g} s after {len(lines)}")
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                buf += chunk
            code = proc.wait(timeout=line_limit)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    return code, lines, stderr, time.monotonic() - start


HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.pwrite(fd, str(os.getpid()).encode(), 0)
print("held", flush=True)
time.sleep(300)
"""


@pytest.fixture
def held_lock(home):
    """A live process holding the progress file's lock, as another attn-drill would; yields its pid."""
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(home / ".state.lock")], stdout=subprocess.PIPE,
                            text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready and proc.stdout.readline().strip() == "held"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def reference(name: str):
    """The model answer reference/<name>.py, loaded as a fresh module: the one loader every test uses."""
    import importlib.util

    from attn_drill import paths

    spec = importlib.util.spec_from_file_location(f"ref_{name}", paths.REFERENCE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
