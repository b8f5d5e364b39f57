"""Every test gets its own attn-drill home and its own working folder, so no test sees another's
progress or files, and none touches the real user's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("ATTN_DRILL_HOME", str(home))
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
