"""After a check (practice/record.py): one bookkeeping call for check, watch and mock. These tests are about the
bookkeeping, not the process boundary, so the checker is replaced by canned reports (no worker starts)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attn_drill import catalogue, cli, process
from attn_drill.practice import record
from attn_drill.report import FAIL, NOT_STARTED, PASS, STAGES, Finding, Report, Stage
from attn_drill.store import attempts, history, state

SDPA = catalogue.get("sdpa")


def invoke(*args: str):
    return CliRunner().invoke(cli.get_app(), list(args))


def canned(path, *, passed: bool = True, slug: str = "missing-scale", not_started: bool = False,
           ours: bool = False) -> Report:
    """A report as the worker would send it."""
    rep = Report("sdpa", str(path), 0)
    if not_started:
        rep.stages = [Stage("load", PASS), Stage("api", PASS), Stage("shapes", FAIL, f"{NOT_STARTED} (line 9)")]
        return rep
    rep.stages = [Stage(s, PASS) for s in STAGES]
    if not passed or ours:
        rep.stages[3] = Stage("values", FAIL, "differs")
        what = "internal-error" if ours else slug
        rep.findings = [Finding(what, "error", "t", "m", "e", "f", line=3, score=1.0)]
    return rep


@pytest.fixture
def practice_file(isolated):
    """`attn-drill start sdpa`'s file, with the model answer written in."""
    assert invoke("start", "sdpa").exit_code == 0
    path = state.load().file("sdpa")
    shutil.copy(SDPA.reference, path)
    return path


@pytest.fixture
def checker(monkeypatch):
    """Replace the worker: each check yields the next canned report; `during` runs while it is "checking"."""
    plan = {"reports": [], "during": None}

    def run_checks(jobs, **_):
        for job in jobs:
            if plan["during"]:
                plan["during"](job.path)
            yield plan["reports"].pop(0)(job.path)

    monkeypatch.setattr(process, "run_checks", run_checks)
    return plan


def test_solved_in_is_said_on_the_attempts_first_pass_only(practice_file, checker):
    checker["reports"] = [canned, canned]
    first, again = invoke("check"), invoke("check")
    assert first.exit_code == 0 and "Solved in" in first.stdout, first.stdout
    assert again.exit_code == 0 and "Solved in" not in again.stdout, again.stdout
    solve_times = [c["solve_seconds"] for c in history.checks("sdpa")]
    assert solve_times[0] is not None and solve_times[1:] == [None]


def test_check_keeps_the_bytes_it_judged_not_a_save_made_during_the_check(practice_file, checker):
    judged = practice_file.read_bytes()
    checker["reports"] = [lambda p: canned(p, passed=False)]
    checker["during"] = lambda p: p.write_text("# saved while the check ran\n")
    assert invoke("check").exit_code == 1
    (kept,) = attempts.load("sdpa").attempts
    assert attempts.content("sdpa", kept) == judged and kept.slug == "missing-scale"


@pytest.mark.parametrize("how", ["not_started", "ours"])
def test_a_check_that_judged_nothing_leaves_nothing(practice_file, checker, how):
    checker["reports"] = [lambda p: canned(p, **{how: True})]
    r = invoke("check")
    assert r.exit_code == 1
    assert history.checks() == [] and history.reviews("sdpa") == [] and attempts.load("sdpa").attempts == []
    if how == "ours":
        assert "Not recorded: this failure is attn-drill's, not yours." in r.stdout
        assert "Stuck?" not in r.stdout


def test_json_records_as_the_screen_does(practice_file, checker):
    checker["reports"] = [lambda p: canned(p, passed=False)]
    r = invoke("check", "--json")
    assert json.loads(r.stdout)["version"] == 1
    assert [c["slugs"] for c in history.checks("sdpa")] == [["missing-scale"]]
    assert len(attempts.load("sdpa").attempts) == 1


def test_the_same_content_counts_once_and_its_attempt_is_kept_again(practice_file):
    ex, st = SDPA, state.load()
    attempt = record.practice_attempt(ex, practice_file, st)
    assert attempt.practice and attempt.id == st.started_at("sdpa")
    rep = canned(practice_file, passed=False)
    first = record.after_check(ex, practice_file, rep, source="watch", attempt=attempt, data=b"x = 1\n")
    again = record.after_check(ex, practice_file, rep, source="watch", attempt=attempt, data=b"x = 1\n",
                               repeat=True)
    assert first.recorded and not again.recorded and first.kept and again.kept
    assert len(history.checks("sdpa")) == 1 and attempts.load("sdpa").attempts[0].checks == 2


def test_a_file_that_is_no_attempt_is_recorded_but_not_kept_or_timed(isolated):
    other = isolated / "sdpa.py"
    shutil.copy(SDPA.reference, other)
    attempt = record.practice_attempt(SDPA, other, state.load())
    done = record.after_check(SDPA, other, canned(other), source="check", attempt=attempt)
    assert done.recorded and not done.kept and done.solved is None
    assert history.checks("sdpa")[0]["attempt"] is None


def test_the_judge_hashes_the_very_bytes_it_runs(isolated):
    """load reads the file once and runs what it read: a file that rewrites itself while it is imported is
    judged, and hashed, as it was read."""
    import hashlib

    from attn_drill.judge.engine import check_file

    path = isolated / "sdpa.py"
    text = (Path(__file__).parent.parent / "reference" / "sdpa.py").read_text()
    text += "\nopen(__file__, 'w').write('def scaled_dot_product_attention(q, k, v, mask=None):\\n    return q, q\\n')\n"
    path.write_text(text)
    rep = check_file(path, "sdpa", 3)
    assert rep.digest == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert [s.status for s in rep.stages[:4]] == ["pass"] * 4  # the version read ran, not the one written


def test_a_verdict_on_other_bytes_than_were_read_is_not_kept(isolated, capsys):
    """The file was saved between the CLI's read and the checker's: the verdict is recorded, no attempt kept."""
    from attn_drill.practice import record
    from attn_drill.store import attempts

    ex = catalogue.get("sdpa")
    path = isolated / "sdpa.py"
    path.write_text("v2\n")
    rep = Report("sdpa", str(path), 1, stages=[Stage("load", PASS, "ok")])
    rep.digest = attempts.digest(b"v2\n")
    clock = record.Clock("a1", 5.0, practice=True)
    assert not record.after_check(ex, path, rep, source="check", attempt=clock, data=b"v1\n").kept
    assert "changed while it was being checked" in capsys.readouterr().err
    assert attempts.load("sdpa").attempts == []
    assert record.after_check(ex, path, rep, source="check", attempt=clock, data=b"v2\n").kept
