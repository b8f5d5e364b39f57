"""The progress file: tolerant reads, atomic writes, and the records the commands rely on."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from attn_drill import state


def write_raw(text: str) -> Path:
    path = state.state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_is_an_empty_state(home):
    st = state.load()
    assert st.current is None
    assert st.status("mha") == state.NEW
    assert st.best("mha") is None and st.hints_shown("mha") == 0 and st.history("mha") == []
    assert not state.state_file().exists()  # reading never creates it


def test_lives_under_attn_drill_home(home):
    assert state.state_file() == home / "state.json"


def test_round_trip(home):
    with state.edit() as st:
        st.record_start("mha", Path("attn-practice/mha.py"))
        st.set_hints_shown("mha", 2)
    again = state.load()
    assert again.current == "mha"
    assert again.file("mha") == (Path.cwd() / "attn-practice/mha.py").resolve()
    assert again.status("mha") == state.STARTED
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


@pytest.mark.parametrize("raw", [b"[1, 2]", b'"a string"', b'{"current": "\xff\xfe"}', b""])
def test_json_of_the_wrong_kind_or_bad_bytes_counts_as_corrupt(home, raw):
    path = write_raw("")
    path.write_bytes(raw)
    assert state.load().current is None
    assert (home / "state.json.corrupt").read_bytes() == raw


def test_malformed_fields_are_tolerated(home):
    write_raw(json.dumps({"current": 3, "exercises": {"mha": "nope", "sdpa": {
        "hints_shown": "two", "best_seconds": "fast", "history": "none", "passed": "yes", "file": 7}}}))
    st = state.load()
    assert st.current is None
    assert st.status("mha") == state.NEW
    assert st.hints_shown("sdpa") == 0 and st.best("sdpa") is None and st.history("sdpa") == []
    assert st.status("sdpa") == state.STARTED  # it has a (bad) file field, but passed is not True
    assert st.file("sdpa") is None
    st.record_start("mha", Path("mha.py"))  # a malformed record is replaced, not a crash
    assert st.status("mha") == state.STARTED


def test_unknown_fields_survive_a_save(home):
    write_raw(json.dumps({"future_field": [1, 2], "exercises": {"mha": {"note": "mine"}}}))
    with state.edit() as st:
        st.set_hints_shown("mha", 1)
    data = json.loads(state.state_file().read_text())
    assert data["future_field"] == [1, 2] and data["exercises"]["mha"]["note"] == "mine"


def test_save_is_atomic_and_leaves_no_temp_files(home, monkeypatch):
    with state.edit() as st:
        st.record_start("mha", Path("mha.py"))
    before = state.state_file().read_text()

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        with state.edit() as st:
            st.record_start("sdpa", Path("sdpa.py"))
    assert state.state_file().read_text() == before  # the old file is whole
    assert sorted(p.name for p in home.iterdir()) == [".state.lock", "state.json"]


def test_an_error_inside_edit_saves_nothing(home):
    with pytest.raises(RuntimeError):
        with state.edit() as st:
            st.record_start("mha", Path("mha.py"))
            raise RuntimeError
    assert not state.state_file().exists()


def backdate(st: state.State, exercise_id: str, seconds: float) -> None:
    then = datetime.now(timezone.utc) - timedelta(seconds=seconds)
    st.entry(exercise_id)["started_at"] = then.isoformat()


def test_a_pass_of_the_started_file_records_the_best_time(tmp_path):
    st = state.State()
    f = tmp_path / "mha.py"
    st.record_start("mha", f)
    backdate(st, "mha", 300)
    took = st.record_check("mha", f, passed=True, seed=1, finding=None)
    assert took == pytest.approx(300, abs=5)
    assert st.status("mha") == state.PASSED and st.best("mha") == pytest.approx(300, abs=5)
    backdate(st, "mha", 100)  # a faster solve after a restart lowers the best
    st.record_check("mha", f, passed=True, seed=2, finding=None)
    assert st.best("mha") == pytest.approx(100, abs=5)
    backdate(st, "mha", 900)  # a slower one does not raise it
    st.record_check("mha", f, passed=True, seed=3, finding=None)
    assert st.best("mha") == pytest.approx(100, abs=5)


def test_a_failure_is_history_only(tmp_path):
    st = state.State()
    f = tmp_path / "mha.py"
    st.record_start("mha", f)
    assert st.record_check("mha", f, passed=False, seed=7, finding="missing-scale") is None
    assert st.status("mha") == state.STARTED and st.best("mha") is None
    (h,) = st.history("mha")
    assert (h["passed"], h["seed"], h["finding"], h["file"]) == (False, 7, "missing-scale", str(f.resolve()))
    assert datetime.fromisoformat(h["at"]).tzinfo is not None


def test_a_pass_of_another_file_counts_but_sets_no_time(tmp_path):
    st = state.State()
    st.record_start("mha", tmp_path / "mine.py")
    assert st.record_check("mha", tmp_path / "other" / "mha.py", passed=True, seed=0, finding=None) is None
    assert st.status("mha") == state.PASSED and st.best("mha") is None


def test_history_is_capped(tmp_path):
    st = state.State()
    for i in range(state.HISTORY_LIMIT + 5):
        st.record_check("sdpa", tmp_path / "sdpa.py", passed=False, seed=i, finding=None)
    h = st.history("sdpa")
    assert len(h) == state.HISTORY_LIMIT and h[-1]["seed"] == state.HISTORY_LIMIT + 4


def test_restart_clock_only_when_asked(tmp_path):
    st = state.State()
    st.record_start("mha", tmp_path / "mha.py")
    backdate(st, "mha", 600)
    old = st.peek("mha")["started_at"]
    st.record_start("mha", tmp_path / "mha.py", restart_clock=False)
    assert st.peek("mha")["started_at"] == old
    st.record_start("mha", tmp_path / "mha.py")
    assert st.peek("mha")["started_at"] != old


def test_seconds_since_tolerates_junk():
    assert state.seconds_since(None) is None
    assert state.seconds_since("yesterday") is None
    assert state.seconds_since("2020-01-01T00:00:00") > 0  # naive stamps are read as UTC
