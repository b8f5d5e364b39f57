"""The SQLite practice history: migrations, concurrent writers, a corrupt file, reading back."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from attn_drill import history


def names(conn) -> list[str]:
    return history.applied(conn)


def test_a_new_history_gets_every_migration_in_order(home):
    assert not history.db_file().exists()
    assert history.checks() == [] and history.mocks() == []  # reading creates nothing
    assert not history.db_file().exists()
    assert history.record_check("mha", passed=False, slugs=["missing-scale"], duration=0.2)
    with history.connect() as conn:
        assert names(conn) == [n for n, _ in history.MIGRATIONS]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert history.migrate(conn) == []  # nothing left to apply


def test_an_old_database_is_migrated_forward_and_keeps_its_rows(home):
    home.mkdir()
    conn = sqlite3.connect(history.db_file(), isolation_level=None)
    conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    name, sql = history.MIGRATIONS[0]
    for statement in history._statements(sql):
        conn.execute(statement)
    conn.execute("INSERT INTO migrations VALUES (?, 0)", (name,))
    conn.execute("INSERT INTO checks (exercise, at, passed, slugs, duration) VALUES ('sdpa', 5, 1, '[]', 0.1)")
    conn.close()

    rows = history.checks()
    assert len(rows) == 1 and rows[0]["exercise"] == "sdpa" and rows[0]["passed"] is True
    assert rows[0]["source"] == "check" and rows[0]["warnings"] == []  # the later migration's defaults
    with history.connect() as conn:
        assert names(conn) == [n for n, _ in history.MIGRATIONS]


def test_a_failing_migration_changes_nothing(home, monkeypatch):
    history.record_check("sdpa", passed=True, slugs=[])
    monkeypatch.setattr(history, "MIGRATIONS", history.MIGRATIONS + [
        ("9999-broken", "ALTER TABLE checks ADD COLUMN extra TEXT; THIS IS NOT SQL")])
    with pytest.raises(sqlite3.OperationalError):
        with history.connect():
            pass
    conn = sqlite3.connect(history.db_file())
    columns = [r[1] for r in conn.execute("PRAGMA table_info(checks)")]
    assert "extra" not in columns  # rolled back with the migration's record
    assert "9999-broken" not in [r[0] for r in conn.execute("SELECT name FROM migrations")]
    conn.close()


def test_checks_round_trip(home):
    history.record_check("mha", passed=False, slugs=["wrong-head-merge", "missing-scale"],
                         warnings=["dtype-not-preserved"], duration=0.25, source="watch", attempt="A",
                         seed=3, file="/x/mha.py", at=100.0)
    history.record_check("mha", passed=True, slugs=[], duration=0.2, attempt="A", solve_seconds=95.0, at=200.0)
    history.record_check("sdpa", passed=True, slugs=[], at=150.0)
    rows = history.checks("mha")
    assert [r["at"] for r in rows] == [100.0, 200.0]
    first = rows[0]
    assert first["slugs"] == ["wrong-head-merge", "missing-scale"] and first["warnings"] == ["dtype-not-preserved"]
    assert (first["source"], first["attempt"], first["seed"], first["file"]) == ("watch", "A", 3, "/x/mha.py")
    assert rows[1]["solve_seconds"] == 95.0 and rows[1]["passed"] is True
    assert [r["exercise"] for r in history.checks()] == ["mha", "sdpa", "mha"]


def test_mocks_round_trip_in_time_order(home):
    for i, end in enumerate((30.0, 10.0, 20.0)):
        history.record_mock({"id": f"m{i}", "exercise": "sdpa", "started_at": end - 5, "ended_at": end,
                             "strict": False, "passed": True, "seconds_used": 5.0, "target_seconds": 180.0,
                             "score": 50 + i})
    assert [c["id"] for c in history.mocks()] == ["m1", "m2", "m0"]
    assert [c["id"] for c in history.mocks(limit=2)] == ["m2", "m0"]


def test_a_corrupt_history_is_set_aside_with_a_warning(home, capsys):
    home.mkdir()
    garbage = b"this is not a database, but someone's bytes" * 100
    history.db_file().write_bytes(garbage)
    assert history.record_check("sdpa", passed=True, slugs=[])
    err = capsys.readouterr().err
    assert "unreadable" in err and "history.sqlite3.corrupt" in err
    aside = [p for p in home.iterdir() if p.name.startswith("history.sqlite3.corrupt")]
    assert len(aside) == 1 and aside[0].read_bytes() == garbage  # kept, byte for byte
    assert [r["exercise"] for r in history.checks()] == ["sdpa"]


def test_a_second_corrupt_history_keeps_the_first(home):
    home.mkdir()
    (home / "history.sqlite3.corrupt").write_bytes(b"an older one")
    history.db_file().write_bytes(b"not a database" * 100)
    assert history.progress() == {}  # a fresh, empty history: `list` still works
    assert (home / "history.sqlite3.corrupt").read_bytes() == b"an older one"
    assert (home / "history.sqlite3.corrupt.1").read_bytes() == b"not a database" * 100


def test_progress_is_one_record_per_exercise(home):
    assert history.progress() == {} and not history.db_file().exists()  # reading creates nothing
    history.record_check("mha", passed=False, slugs=["missing-scale"], attempt="A")
    history.record_check("mha", passed=True, slugs=[], attempt="A", solve_seconds=300.0)
    history.record_check("mha", passed=True, slugs=[], attempt="A", solve_seconds=320.0)  # the same attempt
    history.record_check("mha", passed=True, slugs=[], source="mock", attempt="mock:1", solve_seconds=200.0)
    history.record_check("mha", passed=False, slugs=["missing-scale"], attempt="B")
    history.record_check("sdpa", passed=True, slugs=[])  # a file of no attempt: passed, no time
    history.record_check("gqa", passed=False, slugs=["wrong-group"], attempt="C")
    done = history.progress()
    assert done["mha"] == history.Progress(checks=5, attempts=3, passes=2, passed=True, solve_seconds=(200.0, 300.0))
    assert done["mha"].best == 200.0  # the mock's pass is the fastest
    assert done["sdpa"] == history.Progress(checks=1, attempts=0, passes=0, passed=True)
    assert (done["gqa"].passed, done["gqa"].best, done["gqa"].attempts) == (False, None, 1)
    assert "rope" not in done and history.progress_of("rope") == history.Progress()


def test_an_unreadable_history_reads_as_empty_with_a_warning(home, capsys):
    home.mkdir()
    history.db_file().mkdir()  # a folder where the database should be
    assert history.progress() == {}
    assert "could not read the practice history" in capsys.readouterr().err


def test_a_locked_or_unwritable_history_never_breaks_the_caller(home, capsys):
    home.mkdir()
    history.db_file().mkdir()  # a folder where the database should be
    assert history.record_check("sdpa", passed=True, slugs=[]) is False
    assert "could not record the check" in capsys.readouterr().err


WRITER = textwrap.dedent("""
    import sys
    from attn_drill import history
    for i in range(int(sys.argv[2])):
        assert history.record_check(sys.argv[1], passed=i % 2 == 0, slugs=["missing-scale"], duration=0.01)
""")


def test_two_terminals_writing_at_once_lose_and_corrupt_nothing(home):
    """Four processes start on a database that does not exist yet (so they also race to migrate it)."""
    per, procs = 40, []
    for k in range(4):
        procs.append(subprocess.Popen([sys.executable, "-c", WRITER, f"ex{k}", str(per)], stderr=subprocess.PIPE,
                                      text=True))
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "could not record" not in err
    rows = history.checks()
    assert len(rows) == 4 * per
    assert {r["exercise"] for r in rows} == {f"ex{k}" for k in range(4)}
    with history.connect() as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert names(conn) == [n for n, _ in history.MIGRATIONS]  # each applied once
