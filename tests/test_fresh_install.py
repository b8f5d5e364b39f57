"""A day-one user has what the README's first command installs, and no more: the judge needs no numpy, and when
the checker itself fails before any user code runs, that is attn-drill's error, never the user's mistake.
(.ci/run proves the whole install in a new environment with scripts/fresh_install.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SDPA = ROOT / "reference" / "sdpa.py"

# torch imports without numpy, and then every .numpy() raises "Numpy is not available", as on a fresh install
NO_NUMPY = """
import json, sys
sys.modules["numpy"] = None
from pathlib import Path
from attn_drill.judge import tamper
from attn_drill.judge.engine import check_file
tamper.snapshot()  # the canary: a fixed attention, hashed
rep = check_file(Path(sys.argv[1]), "sdpa", 7)
print(json.dumps(rep.to_dict()))
"""


def test_the_judge_needs_no_numpy():
    run = subprocess.run([sys.executable, "-c", NO_NUMPY, str(SDPA)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    rep = json.loads(run.stdout.splitlines()[-1])
    assert rep["passed"], rep["findings"]


# A worker whose own preparation fails before the user's file is even loaded: the snapshot raises, or the
# judge itself cannot be imported (a bug of ours, a broken install).
BROKEN_WORKER = """
import os, sys
from attn_drill.judge import tamper
from attn_drill.process import worker

def broken():
    raise RuntimeError("Numpy is not available")

if sys.argv[2] == "snapshot":
    tamper.snapshot = broken
else:
    sys.modules["attn_drill.judge.engine"] = None  # importing it raises ImportError
worker.main(["worker", str(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600))])
"""


@pytest.mark.parametrize("broken, said", [("snapshot", "Numpy is not available"),
                                          ("import", "attn_drill.judge.engine")])
def test_a_checker_failure_before_user_code_is_ours_and_not_recorded(tmp_path, broken, said):
    from attn_drill.store import history
    from attn_drill.report import Report

    events = tmp_path / "events"
    spec = {"key": "", "seed": 3, "jobs": [{"path": str(SDPA), "exercise": "sdpa"}]}
    run = subprocess.run([sys.executable, "-c", BROKEN_WORKER, str(events), broken], input=json.dumps(spec),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    wire = [json.loads(line.split(" ", 1)[1]) for line in events.read_text().splitlines()]
    assert [e["event"] for e in wire] == ["start", "report"]
    rep = Report.from_wire(wire[1]["report"])
    assert [f.slug for f in rep.errors] == ["internal-error"], rep.findings
    assert said in rep.errors[0].evidence
    assert rep.ours and not rep.judged and not rep.passed
    assert history.record_report(rep, source="check", attempt=None, solve_seconds=None) is False
    assert history.checks() == []
