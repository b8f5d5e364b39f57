"""The progress file: tolerant reads, atomic writes, and the records the commands rely on (the pointers here,
passed and best times from the practice history)."""

from __future__ import annotations

import errno
import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from attn_drill import catalogue, say
from attn_drill.practice import record
from attn_drill.store import history, state
from attn_drill.report import FAIL, PASS, Finding, Report, Stage

@pytest.fixture(autouse=True)
def fresh_warnings():
    """Each test is one command: a warning said "once" in an earlier test may be said again."""
    say.reset_warnings()

MHA = catalogue.get("mha")


def write_raw(text: str) -> Path:
    path = state.state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_is_an_empty_state(home):
    st = state.load()
    assert st.current is None
    assert st.status("mha", passed=False) == state.NEW
    assert st.started_at("mha") is None and st.hints_shown("mha") == 0 and st.file("mha") is None
    assert history.progress_of("mha").best is None and history.checks("mha") == []
    assert not state.state_file().exists() and not history.db_file().exists()  # reading never creates them


def test_lives_under_attn_drill_home(home):
    assert state.state_file() == home / "state.json"


def test_round_trip(home):
    with state.edit() as st:
        st.record_start("mha", Path("attn-practice/mha.py"))
        st.set_hints_shown("mha", 2)
    again = state.load()
    assert again.current == "mha"
    assert again.file("mha") == (Path.cwd() / "attn-practice/mha.py").resolve()
    assert again.status("mha", passed=False) == state.STARTED
    assert again.status("mha", passed=True) == state.PASSED
    assert again.hints_shown("mha") == 2
    assert json.loads(state.state_file().read_text())["version"] == state.VERSION


def test_corrupt_file_is_kept_aside_not_lost(home):
    path = write_raw('{"current": "mha", oops')
    st = state.load()
    assert st.current is None
    aside = home / "state.json.corrupt"
    assert aside.read_text() == '{"current": "mha", oops'
    assert not path.exists()


def test_a_second_corrupt_file_does_not_overwrite_the_first(home):
    write_raw("first garbage")
    state.load()
    write_raw("second garbage")
    state.load()
    assert (home / "state.json.corrupt").read_text() == "first garbage"
    assert (home / "state.json.corrupt.1").read_text() == "second garbage"


def test_setting_aside_never_replaces_a_file_another_process_just_made(tmp_path, monkeypatch):
    from attn_drill.store.atomic import set_aside

    bad, theirs = tmp_path / "state.json", tmp_path / "state.json.corrupt"
    bad.write_text("mine")
    theirs.write_text("theirs")
    monkeypatch.setattr(Path, "exists", lambda self: False)  # as if it appeared after we looked
    assert set_aside(bad) == tmp_path / "state.json.corrupt.1"
    assert theirs.read_text() == "theirs" and (tmp_path / "state.json.corrupt.1").read_text() == "mine"
    assert not os.path.lexists(bad)


@pytest.mark.parametrize("raw", [b"[1, 2]", b'"a string"', b'{"current": "\xff\xfe"}', b""])
def test_json_of_the_wrong_kind_or_bad_bytes_counts_as_corrupt(home, raw):
    path = write_raw("")
    path.write_bytes(raw)
    assert state.load().current is None
    assert (home / "state.json.corrupt").read_bytes() == raw


def test_malformed_fields_are_set_aside_and_the_rest_kept(home, capsys):
    # best_seconds, history and passed are fields of older files: the history holds them now
    raw = json.dumps({"current": 3, "exercises": {"mha": "nope", "gqa": {"hints_shown": 2}, "sdpa": {
        "hints_shown": "two", "best_seconds": "fast", "history": "none", "passed": "yes", "file": 7,
        "started_at": 5}}})
    write_raw(raw)
    st = state.load()
    assert st.current is None
    assert st.status("mha", passed=False) == state.NEW
    assert st.hints_shown("sdpa") == 0 and st.started_at("sdpa") is None
    assert st.status("sdpa", passed=False) == state.NEW  # its file and clock were junk: dropped
    assert st.file("sdpa") is None and st.solve_seconds("sdpa", Path("sdpa.py")) is None
    assert st.hints_shown("gqa") == 2  # what was fine is kept
    st.record_start("mha", Path("mha.py"))  # a malformed record is replaced, not a crash
    assert st.status("mha", passed=False) == state.STARTED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: ") and "wrong type" in err
    assert (home / "state.json.corrupt").read_text() == raw  # the original, byte for byte
    saved = json.loads(state.state_file().read_text())  # cleaned at once: the next command finds no damage
    assert saved["exercises"]["gqa"] == {"hints_shown": 2} and saved["exercises"]["sdpa"]["passed"] == "yes"
    state.load()
    assert capsys.readouterr().err == "" and not (home / "state.json.corrupt.1").exists()


def test_unknown_fields_survive_a_save(home):
    write_raw(json.dumps({"future_field": [1, 2], "exercises": {"mha": {"note": "mine"}}}))
    with state.edit() as st:
        st.set_hints_shown("mha", 1)
    data = json.loads(state.state_file().read_text())
    assert data["future_field"] == [1, 2] and data["exercises"]["mha"]["note"] == "mine"


def test_save_is_atomic_and_leaves_no_temp_files(home, monkeypatch, capsys):
    with state.edit() as st:
        st.record_start("mha", Path("mha.py"))
    before = state.state_file().read_text()

    def boom(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with state.edit() as st:  # a failed save warns and the caller goes on
        st.record_start("sdpa", Path("sdpa.py"))
    assert "could not save your progress" in capsys.readouterr().err
    assert state.state_file().read_text() == before  # the old file is whole
    assert sorted(p.name for p in home.iterdir()) == [".state.lock", "state.json"]


def test_an_error_inside_edit_saves_nothing(home):
    with pytest.raises(RuntimeError):
        with state.edit() as st:
            st.record_start("mha", Path("mha.py"))
            raise RuntimeError
    assert not state.state_file().exists()


def backdate(exercise_id: str, seconds: float) -> None:
    then = datetime.now(timezone.utc) - timedelta(seconds=seconds)
    with state.edit() as st:
        st.entry(exercise_id)["started_at"] = then.isoformat()


def start(f: Path) -> None:
    with state.edit() as st:
        st.record_start("mha", f)


def check(f: Path, passed: bool, seed: int = 0, slug: str = "missing-scale") -> tuple:
    """What `check` and `watch` do with a report of `f`: (solve time or None, best time)."""
    rep = Report("mha", str(f.resolve()), seed, stages=[Stage("values", PASS if passed else FAIL)])
    if not passed:
        rep.findings = [Finding(slug, "error", "title", "message", "evidence", "fix")]
    done = record.after_check(MHA, f, rep, source="check", attempt=record.practice_attempt(MHA, f, state.load()))
    return done.solved, done.best


def test_a_pass_of_the_started_file_records_the_best_time(tmp_path):
    f = tmp_path / "mha.py"
    start(f)
    backdate("mha", 300)
    took, best = check(f, passed=True, seed=1)
    assert took == pytest.approx(300, abs=5) and best == pytest.approx(300, abs=5)
    assert history.progress_of("mha").passed and history.progress_of("mha").best == pytest.approx(300, abs=5)
    start(f)  # a faster solve after a restart lowers the best
    backdate("mha", 100)
    assert check(f, passed=True, seed=2)[1] == pytest.approx(100, abs=5)
    start(f)  # a slower one does not raise it
    backdate("mha", 900)
    assert check(f, passed=True, seed=3)[1] == pytest.approx(100, abs=5)
    assert history.progress_of("mha").best == pytest.approx(100, abs=5)


def test_a_failure_is_history_only(tmp_path):
    f = tmp_path / "mha.py"
    start(f)
    before = state.state_file().read_bytes()
    assert check(f, passed=False, seed=7) == (None, None)
    assert state.load().status("mha", passed=history.progress_of("mha").passed) == state.STARTED
    assert history.progress_of("mha").best is None
    (h,) = history.checks("mha")
    assert (h["passed"], h["seed"], h["slugs"], h["file"]) == (False, 7, ["missing-scale"], str(f.resolve()))
    assert h["attempt"] == state.load().started_at("mha") and h["solve_seconds"] is None
    assert state.state_file().read_bytes() == before  # a check never writes the progress file


def test_a_pass_of_another_file_counts_but_sets_no_time(tmp_path):
    start(tmp_path / "mine.py")
    assert check(tmp_path / "other" / "mha.py", passed=True) == (None, None)
    done = history.progress_of("mha")
    assert state.load().status("mha", passed=done.passed) == state.PASSED and done.best is None
    assert history.checks("mha")[0]["attempt"] is None  # no attempt of its own


def test_checks_never_grow_the_progress_file(tmp_path):
    start(tmp_path / "mha.py")
    size = state.state_file().stat().st_size
    for i in range(30):
        check(tmp_path / "mha.py", passed=False, seed=i)
    assert state.state_file().stat().st_size == size
    seeds = [h["seed"] for h in history.checks("mha")]
    assert seeds == list(range(30))  # every one kept, in order, the latest last


def test_restart_clock_only_when_asked(tmp_path):
    st = state.State()
    st.record_start("mha", tmp_path / "mha.py")
    st.entry("mha")["started_at"] = (datetime.now(timezone.utc) - timedelta(seconds=600)).isoformat()
    old = st.peek("mha")["started_at"]
    st.record_start("mha", tmp_path / "mha.py", restart_clock=False)
    assert st.peek("mha")["started_at"] == old
    st.record_start("mha", tmp_path / "mha.py")
    assert st.peek("mha")["started_at"] != old


def test_seconds_since_tolerates_junk():
    assert state.seconds_since(None) is None
    assert state.seconds_since("yesterday") is None
    assert state.seconds_since("2020-01-01T00:00:00") > 0  # naive stamps are read as UTC


# -- damage of any kind: set aside with one line, and the command goes on ------------------------------
def test_json_nested_too_deep_to_parse_is_set_aside(home, capsys):
    raw = "[" * 200_000 + "]" * 200_000  # json.loads raises RecursionError, not a ValueError
    write_raw(raw)
    assert state.load().current is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: ") and "nested too deep" in err
    assert (home / "state.json.corrupt").read_text() == raw


def test_a_folder_where_the_progress_file_should_be_is_set_aside(home, capsys):
    state.state_file().mkdir(parents=True)
    (state.state_file() / "inside").write_text("kept")
    with state.edit() as st:
        st.set_hints_shown("mha", 1)
    assert state.load().hints_shown("mha") == 1  # saved in a new file
    assert (home / "state.json.corrupt" / "inside").read_text() == "kept"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a file" in err


def test_a_pipe_where_the_progress_file_should_be_never_hangs(home, capsys):
    home.mkdir()
    os.mkfifo(state.state_file())  # reading a pipe would wait for a writer forever
    assert state.load().current is None
    assert "not a file" in capsys.readouterr().err and not state.state_file().exists()


def test_a_folder_where_the_lock_should_be_is_set_aside(home, capsys):
    (home / ".state.lock").mkdir(parents=True)
    with state.edit() as st:
        st.set_hints_shown("mha", 2)
    assert state.load().hints_shown("mha") == 2
    assert (home / ".state.lock.corrupt").is_dir() and (home / ".state.lock").is_file()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was not a file" in err


@pytest.mark.parametrize("entry, field", [
    ({"file": "a\u0000b"}, "file"), ({"file": "x" * 5000}, "file"), ({"started_at": "0001-01-01T00:00:00-23:59"}, None),
    ({"started_at": []}, "started_at"), ({"hints_shown": True}, "hints_shown"), ({"hints_shown": -1}, "hints_shown"),
])
def test_each_field_is_checked(home, capsys, entry, field):
    write_raw(json.dumps({"exercises": {"mha": entry}}))
    st = state.load()
    st.file("mha"), st.started_at("mha"), st.hints_shown("mha"), st.solve_seconds("mha", Path("mha.py"))
    err = capsys.readouterr().err
    assert (f"mha.{field}" in err) if field else err == ""


def test_our_lock_holds_our_pid(home):
    with state.edit():
        assert (home / ".state.lock").read_text() == str(os.getpid())
    assert (home / ".state.lock").read_text() == ""  # cleared when let go




def test_a_lock_held_by_another_process_fails_after_a_bounded_wait(held_lock, monkeypatch):
    monkeypatch.setattr(state, "LOCK_WAIT", 0.3)
    with pytest.raises(state.Locked) as raised:
        with state.edit() as st:
            st.set_hints_shown("mha", 1)
    assert raised.value.pid == str(held_lock)
    assert not state.state_file().exists()  # nothing saved
