"""Hostile and broken files written blind (tests/blind/MANIFEST.md): each gets its verdict through the real CLI,
alone and in batches, and nothing it tries survives the check: no process left, no file of the home or a
neighbour changed, no big file left, no listening port, no shadow module imported, no raw escape printed.
A few minutes: marked slow (python -m pytest tests/test_blind.py -m slow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).parent / "blind" / "run_blind11.py"
SIDE_EFFECTS = ("survivors", "late_marker_lines", "shadow_markers", "home_changed", "files_changed", "leftover_files")
FLAGS = ("big_file_left", "port_47311_listening", "raw_esc_in_stdout")


@pytest.mark.slow
def test_every_blind_file_gets_its_verdict_and_leaves_nothing_behind():
    out = subprocess.run([sys.executable, str(RUNNER)], capture_output=True, text=True, timeout=1800).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(rows) >= 60
    wrong = []
    for r in rows:
        got = r.get("today", r.get("verdicts"))
        if got != r["expected"] or any(r.get(k) for k in SIDE_EFFECTS + FLAGS):
            wrong.append({k: v for k, v in r.items() if v})
    assert not wrong, json.dumps(wrong, indent=1)
