"""The mock interview: picking, the scorecard, the lock, resuming, and whole sessions driven through a
pipe (--answers) and through a real pseudo-terminal (pexpect), with a fake clock so nothing waits."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

import pytest
from conftest import attn_drill_script

from attn_drill import catalogue
from attn_drill.store import history
from attn_drill.practice import mock, questions

SDPA, MHA = catalogue.get("sdpa"), catalogue.get("mha")
CORPUS = Path(__file__).parent / "corpus"
T0 = 2_000_000_000.0


@pytest.fixture
def fake_clock(tmp_path, monkeypatch):
    """A file holding "now"; set(t) moves time for this process and for the commands it starts."""
    path = tmp_path / "clock"

    class Clock:
        def set(self, t: float) -> None:
            tmp = path.with_name("clock.tmp")
            tmp.write_text(repr(t))
            os.replace(tmp, path)

    clock = Clock()
    clock.set(T0)
    monkeypatch.setenv(mock.CLOCK_ENV, str(path))
    return clock


def wait_for(path: Path, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def save(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def mock_file(work: Path, ex=SDPA) -> Path:
    return work / "attn-practice" / "mock" / ex.file


def spawn(*args: str, work: Path):
    pexpect = pytest.importorskip("pexpect")
    return pexpect.spawn(attn_drill_script(), list(args), cwd=str(work), env=dict(os.environ), encoding="utf-8",
                         timeout=120, dimensions=(60, 140))


def card_of_the_one_mock() -> dict:
    cards = history.mocks()
    assert len(cards) == 1
    return cards[0]


# -- the parts -------------------------------------------------------------------------------------------
def test_the_clock_is_injectable(fake_clock, monkeypatch):
    assert mock.now() == T0
    fake_clock.set(T0 + 12.5)
    assert mock.now() == T0 + 12.5
    monkeypatch.delenv(mock.CLOCK_ENV)
    assert abs(mock.now() - time.time()) < 5


def passes(exercise: str, seconds: float, attempt: str) -> None:
    history.record_check(exercise, passed=True, slugs=[], attempt=attempt, solve_seconds=seconds)


def test_pick_goes_untried_then_unpassed_then_slow_then_random():
    exercises = [SDPA, MHA]
    picked = {mock.pick(random.Random(s), exercises)[0].id for s in range(20)}
    assert picked == {"sdpa", "mha"}  # both untried: random among equals
    history.record_check("sdpa", passed=False, slugs=["missing-scale"])
    assert mock.pick(random.Random(0), exercises) == (MHA, "you have not tried it yet")
    history.record_check("mha", passed=False, slugs=["wrong-head-merge"])
    passes("sdpa", SDPA.minutes * 60 * 3, "a")
    assert mock.pick(random.Random(0), exercises) == (MHA, "you have not passed it yet")
    passes("mha", 30, "b")  # mha in time, sdpa only over its target
    assert mock.pick(random.Random(0), exercises) == (SDPA, "your best time is over the target")
    passes("sdpa", 20, "c")
    chosen, why = mock.pick(random.Random(0), exercises)
    assert "random" in why
    assert {mock.pick(random.Random(s), exercises)[0].id for s in range(20)} == {"sdpa", "mha"}


def test_the_mock_picks_from_the_whole_catalogue_and_asks_on_topic():
    """Every exercise can come up (the v2 ones too), and the follow-up bank has questions on its concepts."""
    picked = {mock.pick(random.Random(s))[0].id for s in range(400)}
    assert picked == set(catalogue.exercises())
    for ex_id in ("self-attention", "mha-dims", "relative-position"):
        ex = catalogue.get(ex_id)
        asked = questions.pick(ex.concepts, 3, rng=random.Random(1))
        assert all(set(q.concepts) & set(ex.concepts) for q in asked), ex_id
    assert any("relative-position" in q.concepts for q in questions.pick(["relative-position"], 3))


def test_a_passed_mock_counts_for_picking():
    # what a mock records: its passing check (the one record of passes), then its scorecard
    history.record_check("sdpa", passed=True, slugs=[], source="mock", attempt="mock:m", solve_seconds=10.0)
    history.record_mock({"id": "m", "exercise": "sdpa", "started_at": 0, "ended_at": 1, "strict": False,
                         "passed": True, "seconds_used": 10.0, "target_seconds": 180.0, "score": 90})
    assert mock.pick(random.Random(0), [SDPA, MHA])[0] is MHA


def session(**kw) -> mock.Session:
    base = dict(id="s", exercise="sdpa", file="/x/sdpa.py", started_at=T0, limit_seconds=180.0,
                target_seconds=180.0, strict=False, seed=1, ended_at=T0 + 120, ended_by="pass",
                last={"passed": True, "slugs": []}, checks=3, hints=1,
                mistakes=["missing-scale", "missing-scale", "mask-ignored"])
    base.update(kw)
    return mock.Session(**base)


class Hints:
    """The ui's hint calls, as (text, shown, total, about)."""

    def __init__(self):
        self.said = []

    def hint(self, text, shown, total, about=None):
        self.said.append((text, shown, total, about))


def test_h_gives_the_named_mistake_s_hints_first_then_the_exercise_s(isolated):
    from attn_drill.practice import hints

    s = session(last={"passed": False, "slugs": ["mask-inverted"]}, hints=0, ended_at=None, ended_by=None)
    ui, own = Hints(), hints.for_mistakes()["mask-inverted"]
    for _ in range(len(own) + len(SDPA.hints) + 1):
        mock._hint(s, SDPA, ui)
    assert ui.said[:len(own)] == [(h, i + 1, len(own), "mask-inverted") for i, h in enumerate(own)]
    general = ui.said[len(own):]
    assert general[:-1] == [(h, i + 1, len(SDPA.hints), None) for i, h in enumerate(SDPA.hints)]
    assert general[-1] == (None, len(SDPA.hints), len(SDPA.hints), None)  # all used: no charge
    assert s.hints == len(own) + len(SDPA.hints) and s.mistake_hints == {"mask-inverted": len(own)}
    s.last = {"passed": False, "slugs": ["missing-scale"]}  # a new mistake brings its own hints
    mock._hint(s, SDPA, ui)
    assert ui.said[-1][3] == "missing-scale" and s.hints == len(own) + len(SDPA.hints) + 1


def test_the_scorecard_adds_up():
    qs = questions.pick(["scaling"], 3, rng=random.Random(0))
    right_two = [qs[0].answer, qs[1].answer, qs[2].answer % len(qs[2].choices) + 1]
    card = mock.scorecard(session(question_ids=[q.id for q in qs], answers=right_two))
    assert card["points"] == {"pass": 50, "time": 20, "questions": 20, "hints": -5} and card["score"] == 85
    assert card["mistakes"] == [{"slug": "missing-scale", "count": 2}, {"slug": "mask-ignored", "count": 1}]
    assert card["questions"] == {"ids": [q.id for q in qs], "answers": right_two, "right": 2, "total": 3}
    assert (card["seconds_used"], card["checks"], card["hints"], card["passed"]) == (120.0, 3, 1, True)

    slow = mock.scorecard(session(ended_at=T0 + 270, limit_seconds=600.0, question_ids=[q.id for q in qs],
                                  answers=right_two))
    assert slow["points"]["time"] == 10  # halfway between the target and twice the target
    failed = mock.scorecard(session(last={"passed": False, "slugs": ["missing-scale"]}, hints=0,
                                    question_ids=[q.id for q in qs], answers=[None, None, None]))
    assert failed["score"] == 0 and failed["final_slugs"] == ["missing-scale"]


SHAPE_Q = {"kind": "shape", "line": 18, "code": "scores = q @ k.transpose(-2, -1) / math.sqrt(d)",
           "prompt": "what shape is scores?", "choices": None, "answer": "B H Tq Tk", "shape": [2, 3, 5, 7],
           "symbols": {"B": 2, "H": 3, "Tq": 5, "Tk": 7, "d": 4, "dv": 6}, "explain": "traced"}
COST_Q = {"kind": "cost", "line": 18, "code": "scores = ...", "prompt": "how many bytes?",
          "choices": ["32 MiB", "1 GiB", "2 GiB"], "answer": 1, "explain": "32 x 4096 x 4096 x 2 bytes"}


def test_the_explain_round_after_a_pass_counts_in_the_score():
    """Every follow-up, on the user's own lines or from the bank, has an equal share of the questions' 30 points."""
    qs = questions.pick(["scaling"], 1, rng=random.Random(0))
    card = mock.scorecard(session(explain=[SHAPE_Q, COST_Q, dict(COST_Q, kind="concept")],
                                  explain_answers=["(b, h, tq, tk)", "1", None],
                                  question_ids=[qs[0].id], answers=[qs[0].answer]))
    assert card["explained"] == {"questions": [{"kind": "shape", "line": 18, "right": True},
                                               {"kind": "cost", "line": 18, "right": False},
                                               {"kind": "concept", "line": 18, "right": False}],
                                 "answers": ["(b, h, tq, tk)", "1", None], "right": 1, "total": 3}
    assert card["points"]["questions"] == 15 and card["score"] == 50 + 20 + 15 - 5  # 2 right of 4 follow-ups
    from attn_drill.render import mock as render_mock

    rows = dict((label, str(value)) for label, value in render_mock.scorecard_rows(card, SDPA))
    assert rows["explained"] == "1 of 3 (your own lines)" and rows["questions"] == "1 / 1 right"


def test_a_saved_explain_round_is_checked_on_load(home):
    home.mkdir()
    good = {**GOOD_SESSION, "explain": [SHAPE_Q, COST_Q], "explain_answers": ["B H Tq Tk"]}
    mock.session_file().write_text(json.dumps(good))
    assert mock.load().explain == [SHAPE_Q, COST_Q]
    for bad in ({"explain": [{"kind": "shape", "prompt": "?"}]}, {"explain": [dict(COST_Q, answer=9)]},
                {"explain_answers": [3]}):
        mock.session_file().write_text(json.dumps({**good, **bad}))
        assert mock.load() is None


def test_begin_writes_a_fresh_file_in_the_mock_folder_and_backs_up_an_old_one(isolated, run_script, fake_clock):
    assert run_script("start", "sdpa").returncode == 0
    practice = isolated / "attn-practice" / "sdpa.py"
    practice.write_text("# my practice work\n")
    target = mock_file(isolated)
    target.parent.mkdir(parents=True)
    target.write_text("# my last mock\n")
    s, written = mock.begin(SDPA, minutes=None, strict=False, seed=0, reason="")
    assert Path(s.file) == target and target.read_bytes() == SDPA.skeleton.read_bytes()
    assert written.backup and written.backup.read_text() == "# my last mock\n"
    assert practice.read_text() == "# my practice work\n"
    assert (s.started_at, s.limit_seconds, s.target_seconds) == (T0, 180.0, 180.0)
    assert mock.load() == s  # saved, and read back the same


def test_a_corrupt_session_file_is_set_aside(home):
    home.mkdir()
    mock.session_file().write_text("{not json")
    assert mock.load() is None
    assert not mock.session_file().exists()
    assert (home / "mock.json.corrupt").read_text() == "{not json"


GOOD_SESSION = {"id": "s", "exercise": "sdpa", "file": "/w/attn-practice/mock/sdpa.py", "started_at": T0,
                "limit_seconds": 180.0, "target_seconds": 180.0, "strict": False, "seed": None}


@pytest.mark.parametrize("bad", [
    {"started_at": "now"}, {"limit_seconds": float("inf")}, {"limit_seconds": -5}, {"exercise": "retired"},
    {"exercise": 3}, {"phase": "lunch"}, {"mistakes": [1, 2]}, {"answers": ["1"]}, {"seed": -1},
    {"last": {"passed": True, "slugs": 5}}, {"strict": "yes"}, {"unknown_field": 1},
])
def test_a_session_file_with_wrong_types_is_set_aside_with_a_warning(home, capsys, bad):
    """A hand-edited or foreign mock.json: resuming it would crash on arithmetic or a look-up."""
    home.mkdir()
    mock.session_file().write_text(json.dumps({**GOOD_SESSION, **bad}))
    assert mock.load() is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: ") and "mock.json.corrupt" in err
    assert (home / "mock.json.corrupt").exists() and not mock.session_file().exists()


def test_every_session_field_is_checked_on_load():
    import dataclasses

    assert set(mock.SESSION_FIELDS) == {f.name for f in dataclasses.fields(mock.Session)}


def test_a_good_session_file_loads_quietly(home, capsys):
    home.mkdir()
    mock.session_file().write_text(json.dumps(GOOD_SESSION))
    assert mock.load().exercise == "sdpa" and capsys.readouterr().err == ""


def test_a_folder_in_place_of_the_lock_or_the_session(home, capsys):
    (home / "mock.lock").mkdir(parents=True)
    mock.session_file().mkdir()
    assert mock.load() is None
    with mock.lock():
        pass
    assert (home / "mock.lock.corrupt").is_dir() and (home / "mock.json.corrupt").is_dir()
    assert len(capsys.readouterr().err.splitlines()) == 2


def test_two_corrupt_session_files_in_one_second_are_both_kept(home):
    home.mkdir()
    for text in ("{first", "{second", "{third"):  # microseconds apart: a name stamped by the second would repeat
        mock.session_file().write_text(text)
        assert mock.load() is None
    kept = {p.name: p.read_text() for p in home.iterdir() if p.name.startswith("mock.json.corrupt")}
    assert kept == {"mock.json.corrupt": "{first", "mock.json.corrupt.1": "{second", "mock.json.corrupt.2": "{third"}


def test_one_mock_at_a_time(run_script):
    with mock.lock():
        r = run_script("mock", "--exercise", "sdpa", "--answers", "1,2,3")
        assert r.returncode == 2
        assert f"another mock is running (process {os.getpid()})" in r.stderr
        with pytest.raises(mock.MockBusy):  # also within one process: a second lock is refused
            with mock.lock():
                pass
    with mock.lock():  # released: free again
        pass


def test_bad_answers_are_a_usage_error(run_script):
    r = run_script("mock", "--answers", "1,x")
    assert r.returncode == 2 and "--answers" in r.stderr


# -- whole sessions through a pipe (--answers, no terminal) -------------------------------------------------
def test_a_scripted_mock_that_passes(isolated, fake_clock, run_script):
    assert run_script("start", "sdpa").returncode == 0
    practice = isolated / "attn-practice" / "sdpa.py"
    before = practice.read_bytes()
    answers = ["B H Tq Tk", "2", "B H Tq dv", "1", "2"]  # shapes for the questions on the own file, else choices
    proc = subprocess.Popen([attn_drill_script(), "mock", "--exercise", "sdpa", "--seed", "4", "--answers",
                             ",".join(answers)], cwd=isolated, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    target = mock_file(isolated)
    wait_for(mock.session_file())  # written once the fresh file's version is noted
    fake_clock.set(T0 + 100)
    save(target, SDPA.reference.read_text())
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, out + err
    assert "attn-practice/mock/sdpa.py" in out and "PASSED" in out
    card = card_of_the_one_mock()
    # after a pass the follow-up asks about the mock file's own lines: 4 or 5 questions in all
    mine, bank_part = card["explained"], card["questions"]
    assert mine["total"] >= 3 and 4 <= mine["total"] + bank_part["total"] <= 5
    assert out.count("(from --answers)") == mine["total"] + bank_part["total"] and "scorecard" in out
    assert "line 18  scores = q @ k.transpose(-2, -1) / math.sqrt(d)" in out  # the mock file's own line
    assert f"explained    {mine['right']} of {mine['total']} (your own lines)" in out
    assert mine["answers"] == answers[:mine["total"]] and mine["right"] == sum(q["right"] for q in mine["questions"])
    bank = questions.bank()
    right = sum(bank[q].answer == int(a) for q, a in zip(bank_part["ids"], answers[mine["total"]:]))
    assert bank_part["right"] == right
    assert card["points"]["questions"] == round(30 * (right + mine["right"]) / (mine["total"] + bank_part["total"]))
    follow_up = out[out.index("Tracing your file"):]  # the intro's file path is left unwrapped, on purpose
    assert max(map(len, follow_up.splitlines())) <= 80
    (round_,) = history.explains()  # the round is in the history, as explain's are
    assert (round_["source"], round_["mock"], round_["total"]) == ("mock", card["id"], mine["total"])
    assert card["passed"] and card["ended_by"] == "pass" and card["seconds_used"] == 100.0
    assert f"{card['score']} / 100" in out
    assert all(set(bank[q].concepts) & set(SDPA.concepts) for q in card["questions"]["ids"])
    assert practice.read_bytes() == before  # the practice file is never touched
    assert not mock.session_file().exists()
    mock_checks = [r for r in history.checks("sdpa") if r["source"] == "mock"]
    assert len(mock_checks) == 1 and mock_checks[0]["attempt"] == f"mock:{card['id']}"
    # a mock's pass is a pass: list, solution and stats all say so
    row = next(line for line in run_script("list").stdout.splitlines() if " sdpa " in line)
    assert "passed" in row and "1m 40s" in row
    r = run_script("solution", "sdpa")  # no terminal: before a pass it would refuse without --yes
    assert r.returncode == 0 and "not passed" not in r.stdout + r.stderr
    (stats,) = json.loads(run_script("stats", "--json").stdout)["exercises"]
    assert stats["passed"] and stats["passes"] == 1 and stats["best_seconds"] == 100.0


def test_a_scripted_mock_that_times_out(isolated, fake_clock):
    proc = subprocess.Popen([attn_drill_script(), "mock", "--exercise", "sdpa", "--minutes", "2", "--answers", "1,4,2"],
                            cwd=isolated, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    target = mock_file(isolated)
    wait_for(mock.session_file())
    save(target, (CORPUS / "sdpa" / "missing-scale__no_div.py").read_text())
    deadline = time.monotonic() + 60
    while not [r for r in history.checks() if r["source"] == "mock"]:  # checked on save
        assert time.monotonic() < deadline
        time.sleep(0.05)
    fake_clock.set(T0 + 121)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, out + err
    assert "Time's up" in out and "missing-scale" in out
    card = card_of_the_one_mock()
    assert card["ended_by"] == "time" and not card["passed"] and card["seconds_used"] == 120.0
    assert card["checks"] == 1 and card["final_slugs"] == ["missing-scale"]  # checked on save, not again
    assert card["mistakes"] == [{"slug": "missing-scale", "count": 1}]
    assert card["questions"]["answers"] == [1, 4, 2]
    assert card["points"]["pass"] == 0 and card["points"]["time"] == 0


def test_abandon_drops_the_session_but_keeps_the_file(isolated, fake_clock, run_script):
    s, _ = mock.begin(SDPA, minutes=None, strict=False, seed=0, reason="")
    r = run_script("mock", "--abandon")
    assert r.returncode == 0 and "Dropped the mock of sdpa" in r.stdout
    assert mock.load() is None and Path(s.file).exists()
    assert "No mock in progress" in run_script("mock", "--abandon").stdout


def test_a_mock_left_during_the_questions_resumes_at_the_next_question(isolated, fake_clock, run_script):
    s, _ = mock.begin(SDPA, minutes=None, strict=False, seed=0, reason="")
    qs = questions.pick(SDPA.concepts, 3, rng=random.Random(0))
    s.phase, s.ended_by, s.ended_at = "questions", "quit", T0 + 42
    s.question_ids, s.answers = [q.id for q in qs], [qs[0].answer]
    mock.save(s)
    fake_clock.set(T0 + 500)  # time spent on the questions does not count
    r = run_script("mock", "--answers", "4,3,2")
    assert r.returncode == 1, r.stdout + r.stderr  # never checked: not passed
    assert "Follow-up 1/3" not in r.stdout and "Follow-up 2/3" in r.stdout and "Follow-up 3/3" in r.stdout
    card = card_of_the_one_mock()
    assert card["questions"]["answers"] == [qs[0].answer, 3, 2]
    assert card["seconds_used"] == 42.0 and card["checks"] == 0


def test_without_a_terminal_or_with_answers_no_mock_asks_it_stops_at_once(isolated, run_script):
    for args, said in ((["--answers", "5,1,1"], "answer 1 is 5, but every question has choices 1 to 4"),
                       (["--answers", "1"], "1 answer given; a mock asks 3, or 4-5 after a pass"),
                       (["--answers", "1,2,3,4,1,2"], "6 answers given"),
                       ([], "mock needs a terminal")):
        r = run_script("mock", "-e", "sdpa", *args, timeout=60)  # stdin: not a terminal
        assert r.returncode == 2 and said in r.stderr, (args, r.stderr)
        assert len(r.stderr.splitlines()) == 2 and max(map(len, r.stderr.splitlines())) <= 80
    assert mock.load() is None and not mock_file(isolated).exists() and history.mocks() == []


def test_answers_that_do_not_fit_the_questions_score_nothing_and_the_mock_waits(isolated, fake_clock, run_script):
    s, _ = mock.begin(SDPA, minutes=None, strict=False, seed=0, reason="")
    qs = questions.pick(SDPA.concepts, 3, rng=random.Random(0))
    s.phase, s.ended_by, s.ended_at, s.question_ids = "questions", "quit", T0 + 42, [q.id for q in qs]
    mock.save(s)
    r = run_script("mock", "--answers", "1,2")  # too few: the up-front check refuses it at once
    assert r.returncode == 2 and "2 answers given; a mock asks 3" in r.stderr
    s.question_ids.append(questions.pick(SDPA.concepts, 4, rng=random.Random(0))[3].id)
    mock.save(s)
    r = run_script("mock", "--answers", "1,2,3")  # a count some mock asks, but this one asks 4
    assert r.returncode == 2 and "3 answers given; this mock asks 4 questions (1-4, 1-4, 1-4, 1-4)" in r.stderr
    assert "Nothing was scored" in r.stderr and history.mocks() == [] and mock.load().answers == []
    s.question_ids.pop()
    mock.save(s)
    r = run_script("mock", "--answers", "B H Tq Tk,2,3")  # a shape where a choice is asked
    assert r.returncode == 2 and "answer 1 is 'B H Tq Tk', but question 1 takes a choice 1-4" in r.stderr
    r = run_script("mock", "--answers", "1,2,3,4")  # a surplus answer is left unused
    assert r.returncode == 1 and card_of_the_one_mock()["questions"]["answers"] == [1, 2, 3]


def test_no_question_has_more_choices_than_answers_allow():
    from attn_drill.practice.mock_answers import MAX_CHOICES

    assert max(len(q.choices) for q in questions.bank().values()) <= MAX_CHOICES


# -- in a real terminal ------------------------------------------------------------------------------------
def test_countdown_hints_and_questions_in_a_terminal(isolated, fake_clock):
    pexpect = pytest.importorskip("pexpect")
    child = spawn("mock", "--exercise", "sdpa", "--minutes", "1", "--seed", "2", work=isolated)
    try:
        child.expect("1:00 left")
        fake_clock.set(T0 + 50)
        child.expect("0:10 left")
        child.send("h")
        child.expect("hint 1/")
        save(mock_file(isolated), (CORPUS / "sdpa" / "mask-inverted__where_swapped.py").read_text())
        child.expect("FAILED")
        child.expect("checks 1 · hints 1")
        fake_clock.set(T0 + 61)
        child.expect("Time's up")
        answers = []
        for i in range(1, 4):
            child.expect(f"Follow-up {i}/3")
            child.expect(r"answer \(1-(\d), then Enter\): ")
            n = int(child.match.group(1))
            answers.append(1 + i % n)
            child.send("\r")  # a stray Enter answers nothing (it was the lost answer of one-key choices)
            if i == 1:  # a choice no question has is asked for again, not scored
                child.send(f"{n + 1}\r")
                child.expect(f"a number 1-{n}")
            child.send(f"{answers[-1]}\r")
            child.expect(["✓ right", "✗ not quite"])
            child.expect("why: ")
        child.expect("scorecard")
        child.expect("mask-inverted x1")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 1  # did not pass
    card = card_of_the_one_mock()
    assert card["hints"] == 1 and card["checks"] == 1 and card["questions"]["answers"] == answers
    assert card["ended_by"] == "time" and card["seconds_used"] == 60.0


def test_leave_and_resume_keeps_the_clock_running(isolated, fake_clock):
    pexpect = pytest.importorskip("pexpect")
    child = spawn("mock", "--exercise", "sdpa", "--seed", "1", work=isolated)
    try:
        child.expect("3:00 left")
        fake_clock.set(T0 + 30)
        child.expect("2:30 left")
        child.sendintr()
        child.expect("Left the mock; its clock keeps running")
        child.expect("resumes it")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 130
    assert mock.load().exercise == "sdpa" and not history.mocks()

    fake_clock.set(T0 + 100)  # 70 s pass while no command runs
    child = spawn("mock", "--exercise", "mha", work=isolated)
    try:
        child.expect("A mock of sdpa is in progress")
        child.expect("Resuming your mock of")
        child.expect("1:20 left")
        save(mock_file(isolated), SDPA.reference.read_text())
        child.expect("PASSED")
        child.expect(r"Follow-up 1/(\d)")
        n = int(child.match.group(1))
        for i in range(1, n + 1):
            if i > 1:
                child.expect(f"Follow-up {i}/{n}")
            child.expect([r"answer \(1-\d, then Enter\): ", r"answer \(symbols.*?\): "])
            if "symbols" in child.after:  # a shape, typed and echoed: a slip taken back with Backspace
                child.send("B H Tq Tkx\x7f\r")
                child.expect("B H Tq Tk")
            else:
                child.send("1\r")
            child.expect(["✓ right", "✗ not quite"])
            child.expect("why: ")
        child.expect("scorecard")
        child.expect("explained")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    card = card_of_the_one_mock()
    assert 4 <= card["explained"]["total"] + card["questions"]["total"] == n <= 5
    typed = [a for a, q in zip(card["explained"]["answers"], card["explained"]["questions"]) if q["kind"] == "shape"]
    assert typed and set(typed) == {"B H Tq Tk"}
    assert card["passed"] and card["seconds_used"] == 100.0 and card["exercise"] == "sdpa"
    assert not mock_file(isolated, MHA).exists()


def test_strict_mode_gives_no_hints_and_no_feedback_until_the_end(isolated, fake_clock):
    pexpect = pytest.importorskip("pexpect")
    child = spawn("mock", "--exercise", "sdpa", "--strict", "--answers", "1,1,1,1,1", work=isolated)  # 4-5 asked
    try:
        child.expect("3:00 left")
        child.send("h")
        child.expect("Strict mode: no hints")
        save(mock_file(isolated), SDPA.reference.read_text())
        child.expect("saved. Strict mode: your file is checked once, at the end")
        child.send("c")
        child.expect("checked once, at the end")
        fake_clock.set(T0 + 95)
        child.expect("1:25 left")
        assert "PASSED" not in child.before
        child.send("q")
        child.expect("You ended the coding part")
        child.expect("PASSED")  # the one check
        child.expect("scorecard")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    card = card_of_the_one_mock()
    assert card["strict"] and card["passed"] and card["checks"] == 1 and card["hints"] == 0
    assert card["ended_by"] == "quit" and card["seconds_used"] == 95.0
