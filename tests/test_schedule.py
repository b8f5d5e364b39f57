"""Spaced review (attn_drill/store/schedule.py, FSRS through the fsrs package): how attempts are rated, what `list`
marks as due, what `next` starts, what `mock` picks, and the line after a pass that moves you on."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import attn_drill
from attn_drill import catalogue, cli
from attn_drill.store import history, schedule, state
from attn_drill.practice import mock, moveon
from attn_drill.report import FAIL, NOT_STARTED, PASS, Report, Stage

SOFTMAX, SDPA = catalogue.get("softmax"), catalogue.get("sdpa")
DAY = 86400.0


def invoke(*args: str):
    return CliRunner().invoke(cli.get_app(), list(args))


def report(passed: bool, not_started: bool = False) -> Report:
    detail = f"{NOT_STARTED} (your line 3 ...)" if not_started else "x"
    return Report("sdpa", "f.py", 0, stages=[Stage("load", PASS if passed else FAIL, detail)])


def ratings(exercise: str = "sdpa") -> list[str]:
    return [r["rating"] for r in history.reviews(exercise)]


# -- rating --------------------------------------------------------------------------------------
def test_a_pass_within_the_target_is_good_over_it_hard():
    schedule.after_check(SDPA, report(True), attempt="a1", seconds=SDPA.minutes * 60 - 1, source="check")
    schedule.after_check(SDPA, report(True), attempt="a2", seconds=SDPA.minutes * 60 + 1, source="check")
    assert ratings() == ["good", "hard"]


def test_one_again_per_attempt_then_its_pass():
    for _ in range(3):
        schedule.after_check(SDPA, report(False), attempt="a1", seconds=None, source="watch")
    schedule.after_check(SDPA, report(True), attempt="a1", seconds=30.0, source="watch")
    schedule.after_check(SDPA, report(True), attempt="a1", seconds=20.0, source="watch")  # checked again
    schedule.after_check(SDPA, report(False), attempt="a1", seconds=None, source="watch")  # broken after the pass
    assert ratings() == ["again", "good"]


def test_no_rating_without_an_attempt_or_before_the_todos_are_filled_in():
    schedule.after_check(SDPA, report(True), attempt=None, seconds=None, source="check")
    schedule.after_check(SDPA, report(False, not_started=True), attempt="a1", seconds=None, source="check")
    assert ratings() == []


def test_the_card_comes_from_fsrs_and_grows_with_each_good_review():
    t = 1_900_000_000.0
    gaps = []
    for i in range(3):
        assert schedule.review("sdpa", schedule.GOOD, attempt=f"a{i}", source="check", at=t)
        due = history.reviews("sdpa")[-1]["due"]
        gaps.append(due - t)
        t = due
    assert gaps[0] >= DAY and gaps[0] < gaps[1] < gaps[2]
    card = history.reviews("sdpa")[-1]["card"]
    assert card["stability"] > 0 and card["difficulty"] > 0
    assert schedule.review("sdpa", schedule.AGAIN, attempt="a9", source="check", at=t)
    assert history.reviews("sdpa")[-1]["due"] - t < gaps[2]  # forgotten: back sooner


def test_reset_of_a_file_you_worked_on_is_again_of_the_skeleton_nothing(isolated):
    invoke("start", "sdpa")
    assert invoke("reset", "sdpa", "--yes").exit_code == 0  # the skeleton itself: nothing was tried
    assert ratings() == []
    (isolated / "attn-practice" / "sdpa.py").write_text("# half done\n")
    assert invoke("reset", "sdpa", "--yes").exit_code == 0
    assert ratings() == ["again"] and history.reviews("sdpa")[0]["source"] == "reset"


def test_reset_after_a_pass_is_no_again(isolated):
    invoke("start", "sdpa")
    attempt = state.load().started_at("sdpa")
    history.record_check("sdpa", passed=True, slugs=[], attempt=attempt, solve_seconds=50)
    (isolated / "attn-practice" / "sdpa.py").write_text("# my answer\n")
    assert invoke("start", "sdpa", "--force").exit_code == 0
    assert ratings() == []


# -- the schedule ------------------------------------------------------------------------------------
def rated(exercise: str, due_in: float, rating: str = "good") -> None:
    """A review whose card is due `due_in` seconds from now."""
    now = schedule.now()
    assert history.record_review(exercise, rating, attempt=f"old-{exercise}", source="check", at=now - DAY,
                                 due=now + due_in, card={})


def test_due_is_most_overdue_first():
    rated("mha", -DAY)
    rated("sdpa", -3 * DAY)
    rated("rope", +DAY)
    assert schedule.due() == ["sdpa", "mha"]


def test_next_up_a_due_review_then_the_catalogues_order_then_the_soonest():
    assert schedule.next_up() == (SOFTMAX, "new")
    history.record_check("softmax", passed=True, slugs=[])
    assert schedule.next_up() == (SDPA, "new")
    rated("mha", -DAY)
    assert schedule.next_up() == (catalogue.get("mha"), "review")


def test_next_up_follows_the_catalogue_so_new_exercises_slot_in(monkeypatch):
    order = ["flash", "softmax", "sdpa"]
    exercises = {i: catalogue.exercises()[i] for i in order}
    monkeypatch.setattr(catalogue, "exercises", lambda: exercises)
    assert schedule.next_up()[0].id == "flash"


def test_when_everything_is_passed_next_is_the_review_due_soonest():
    for i, ex in enumerate(catalogue.exercises()):
        history.record_check(ex, passed=True, slugs=[])
        rated(ex, (i + 2) * DAY)
    ex, kind = schedule.next_up()
    assert (ex.id, kind) == ("softmax", "early")


def test_list_marks_what_is_due(capsys):
    rated("mha", -DAY)
    rated("sdpa", +DAY)
    r = invoke("list")
    rows = {line.split()[1] if line.startswith("*") else line.split()[0]: line for line in r.stdout.splitlines()[2:11]}
    assert rows["mha"].startswith("*") and not rows["sdpa"].startswith("*")
    assert "* due for review: mha.  attn-drill next starts mha." in r.stdout
    assert max(map(len, r.stdout.splitlines()[-2:])) <= 80


def test_mock_picks_the_review_that_is_due():
    rated("gqa", -DAY)
    assert mock.pick(random.Random(0)) == (catalogue.get("gqa"), "it is due for review")


def test_a_mock_that_ends_without_a_pass_is_again():
    s = mock.Session(id="m1", exercise="sdpa", file="/x/sdpa.py", started_at=0.0, limit_seconds=60.0,
                     target_seconds=180.0, strict=False, seed=1)
    assert schedule.abandoned(SDPA, attempt=f"mock:{s.id}", source="mock")
    assert not schedule.abandoned(SDPA, attempt=f"mock:{s.id}", source="mock")  # once
    assert ratings() == ["again"]


# -- next ------------------------------------------------------------------------------------------
def test_next_starts_the_first_new_exercise_and_never_touches_a_file(isolated):
    r = invoke("next")
    assert r.exit_code == 0 and "Next: softmax" in r.stdout and "Wrote the skeleton" in r.stdout
    practice = isolated / "attn-practice" / "softmax.py"
    practice.write_text("# mine\n")
    r = invoke("next")
    assert "already exists: left as it is" in r.stdout and practice.read_text() == "# mine\n"


def test_next_starts_a_due_review_fresh_after_a_backup(isolated, home):
    invoke("start", "sdpa")
    with state.edit() as st:  # started long before the review that made it due
        st.entry("sdpa")["started_at"] = "2020-01-01T00:00:00+00:00"
    practice = isolated / "attn-practice" / "sdpa.py"
    practice.write_text("# my passing answer\n")
    history.record_check("softmax", passed=True, slugs=[])
    rated("sdpa", -DAY)
    r = invoke("next")
    assert r.exit_code == 0, r.output
    assert "Next: sdpa (due for review)" in r.stdout and "Backed up your old file" in r.stdout
    (backup,) = (home / "backups" / "sdpa").iterdir()
    assert backup.read_text() == "# my passing answer\n"
    assert practice.read_bytes() == SDPA.skeleton.read_bytes()
    practice.write_text("# the review, half done\n")
    r = invoke("next")  # the review is in progress: left as it is
    assert "in progress" in r.stdout and practice.read_text() == "# the review, half done\n"


# -- after a pass ------------------------------------------------------------------------------------
def test_after_a_pass_the_next_new_one_and_its_command():
    history.record_check("softmax", passed=True, slugs=[])
    assert moveon.after_pass() == [f"1 of {len(catalogue.exercises())} passed.", "Next: sdpa (3 min),",
                                   "attn-drill start sdpa"]
    rated("softmax", -DAY)
    assert moveon.after_pass()[1:] == ["Next: softmax, due for review,", "attn-drill next"]


def test_the_line_wraps_between_segments_only():
    segments = ["Solved in 21s", "(target 2 min, best 21s).", "1 of 9 passed.", "Next: kv-cache (8 min),",
                "attn-drill start kv-cache"]
    lines = moveon.wrap(segments, 40)
    assert all(len(line) <= 40 for line in lines) and " ".join(lines) == " ".join(segments)
    assert "attn-drill start kv-cache" in lines


def test_chinese_segments_join_without_a_space_where_chinese_meets_chinese_or_a_full_width_mark():
    segments = ["用时 21 秒完成", "（目标 2 分钟，最好成绩 21 秒）。", "已通过 1 / 21。", "下一题：sdpa（3 分钟），",
                "attn-drill start sdpa"]
    assert moveon.wrap(segments, 80) == ["用时 21 秒完成（目标 2 分钟，最好成绩 21 秒）。已通过 1 / 21。",
                                         "下一题：sdpa（3 分钟），attn-drill start sdpa"]
    assert moveon.wrap(["通过", "attn-drill next"], 80) == ["通过 attn-drill next"]  # Chinese, then Latin: a space


def test_the_solve_time_and_the_best_agree(isolated, monkeypatch):
    """21.46 s once read 'Solved in 21s ... best 22s': rounded once, both are the same value."""
    invoke("start", "sdpa")
    shutil.copyfile(SDPA.reference, isolated / "attn-practice" / "sdpa.py")
    monkeypatch.setattr(state, "seconds_since", lambda stamp: 21.46)
    r = invoke("check", "--seed", "0")
    assert r.exit_code == 0, r.output
    assert "Solved in 21s (target 3 min, best 21s)." in r.stdout or "Solved in 22s (target 3 min, best 22s)." in r.stdout
    assert history.checks("sdpa")[-1]["solve_seconds"] == 21.5


# -- real processes --------------------------------------------------------------------------------
def run_here(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`python -m attn_drill` of the checkout under test, in an 80-column terminal's width."""
    env = dict(os.environ, COLUMNS="80", PYTHONPATH=str(Path(attn_drill.__file__).resolve().parents[1]))
    return subprocess.run([sys.executable, "-m", "attn_drill", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def test_a_session_from_start_to_next_in_real_processes(isolated):
    r = run_here("next", cwd=isolated)
    assert r.returncode == 0 and "Next: softmax" in r.stdout, r.stderr
    shutil.copyfile(SOFTMAX.reference, isolated / "attn-practice" / "softmax.py")
    r = run_here("check", "--seed", "0", cwd=isolated)
    assert r.returncode == 0, r.stdout + r.stderr
    tail = r.stdout[r.stdout.index("Solved in"):].splitlines()
    assert all(len(line) <= 80 for line in tail)
    text = " ".join(tail)
    assert "(target 2 min, best" in text and f"1 of {len(catalogue.exercises())} passed." in text
    assert "Next: sdpa (3 min), attn-drill start sdpa" in text and "attn-drill start sdpa" in tail[-1]
    assert ratings("softmax") == ["good"]
    r = run_here("next", cwd=isolated)
    assert r.returncode == 0 and "Next: sdpa" in r.stdout and (isolated / "attn-practice" / "sdpa.py").is_file()


def test_next_list_stats_and_a_rating_survive_cards_dated_far_in_the_future(isolated):
    """Cards someone else wrote: due in a billion years, rated in the year 33658, due at the largest float."""
    for ex, at, due in (("sdpa", 1e12, 1e300), ("mha", schedule.now(), 1.7e308), ("softmax", 1e300, 1e300)):
        assert history.record_review(ex, "good", attempt=None, source="check", at=at, due=due, card={})
    for args in (["next"], ["list"], ["stats"], ["stats", "--json"]):
        r = invoke(*args)
        assert r.exit_code == 0 and r.exception is None, (args, r.output, r.exception)
    schedule.after_check(SOFTMAX, report(True), attempt="a1", seconds=10.0, source="check")  # rates after them
    assert schedule.when(1.7e308).startswith("in ")
