"""Counting right: a check's time is the time you waited, the same file checked twice counts once."""

from __future__ import annotations

from pathlib import Path

from attn_drill import catalogue, findings
from attn_drill.store import history
from attn_drill.practice import mock
from attn_drill.process import runner
from attn_drill.report import FAIL, Report, Stage

SDPA, SOFTMAX = catalogue.get("sdpa"), catalogue.get("softmax")


def test_a_checks_time_is_the_wait_not_only_its_stages():
    """The skeleton fails in milliseconds once torch is loaded: it read "in 0.00 s" after two seconds."""
    (rep,) = runner.run_checks([runner.Job(SOFTMAX.skeleton, "softmax")], seed=0)
    assert rep.not_started
    assert rep.seconds > 0.1  # a cold process that imports torch: never that fast


class FakeChecker:
    def __init__(self):
        self.calls = 0

    def check(self, path: Path) -> Report:
        self.calls += 1
        return Report("sdpa", str(path), 0, stages=[Stage("values", FAIL, "x")],
                      findings=[findings.make("missing-scale", "e")])


class QuietUI:
    def checking(self, session):
        pass

    def report(self, session, rep, ex):
        pass


def test_c_twice_on_the_same_file_counts_one_mistake(isolated):
    f = isolated / "sdpa.py"
    f.write_text("# wrong\n")
    s = mock.Session(id="m1", exercise="sdpa", file=str(f), started_at=mock.now(), limit_seconds=180.0,
                     target_seconds=180.0, strict=False, seed=1)
    checker = FakeChecker()
    mock._check(s, SDPA, QuietUI(), checker)
    mock._check(s, SDPA, QuietUI(), checker)  # `c` again: shown again, not counted again
    assert checker.calls == 2
    assert (s.checks, s.mistakes) == (1, ["missing-scale"]) and len(history.checks("sdpa")) == 1
    assert [r["rating"] for r in history.reviews("sdpa")] == ["again"]
    f.write_text("# still wrong, differently\n")
    mock._check(s, SDPA, QuietUI(), checker)
    assert (s.checks, s.mistakes) == (2, ["missing-scale"] * 2) and len(history.checks("sdpa")) == 2
