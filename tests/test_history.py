"""The SQLite practice history: migrations, concurrent writers, a corrupt file, reading back."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from attn_drill.store import history
from attn_drill import say


@pytest.fixture(autouse=True)
def fresh_warnings():
    """Each test is one command: a warning said "once" in an earlier test may be said again."""
    say.reset_warnings()

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


def test_an_unreadable_history_reads_as_empty_with_a_warning(home, capsys, monkeypatch):
    history.record_check("sdpa", passed=True, slugs=[])

    def cannot_open(*args, **kwargs):
        e = sqlite3.OperationalError("disk I/O error")
        e.sqlite_errorcode = 10  # SQLITE_IOERR: not damage, so the file must stay where it is
        raise e

    monkeypatch.setattr(sqlite3, "connect", cannot_open)
    assert history.progress() == {} and history.checks() == [] and history.mocks() == []
    err = capsys.readouterr().err
    assert err.count("could not read the practice history") == 1 and err.count("\n") == 1  # once a command
    assert history.db_file().is_file() and not list(home.glob("*.corrupt*"))


def test_a_locked_or_unwritable_history_never_breaks_the_caller(home, capsys, monkeypatch):
    def locked(*args, **kwargs):
        e = sqlite3.OperationalError("database is locked")
        e.sqlite_errorcode = 5  # SQLITE_BUSY
        raise e

    monkeypatch.setattr(sqlite3, "connect", locked)
    monkeypatch.setattr(history, "BUSY_MS", 50)  # it waits this long for the lock, then warns
    assert history.record_check("sdpa", passed=True, slugs=[]) is False
    assert history.record_mock(MOCK_CARD) is False
    err = capsys.readouterr().err
    assert err.count("could not record the check") == 1 and err.count("\n") == 1
    assert not list(home.glob("*.corrupt*")) if home.exists() else True


def test_a_lock_sqlite_reports_without_waiting_is_waited_for(home, capsys, monkeypatch):
    """SQLite answers "database is locked" at once in some moments (switching to WAL, a checkpoint on close):
    the write is tried again until BUSY_MS, and lands."""
    real, refusals = sqlite3.connect, []

    def busy_twice(*args, **kwargs):
        if len(refusals) < 2:
            e = sqlite3.OperationalError("database is locked")
            e.sqlite_errorcode = 5  # SQLITE_BUSY
            refusals.append(e)
            raise e
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", busy_twice)
    assert history.record_check("sdpa", passed=True, slugs=[]) is True
    assert len(refusals) == 2 and capsys.readouterr().err == ""
    assert [r["exercise"] for r in history.checks()] == ["sdpa"]


MOCK_CARD = {"id": "m", "exercise": "sdpa", "started_at": 1.0, "ended_at": 2.0, "strict": False, "passed": True,
             "seconds_used": 1.0, "target_seconds": 180.0, "score": 70}


def sql(statements: str) -> None:
    conn = sqlite3.connect(history.db_file(), isolation_level=None)
    conn.executescript(statements)
    conn.close()


DAMAGE = {
    "a dropped checks table": lambda: sql("DROP TABLE checks"),
    "a dropped mocks table": lambda: sql("DROP TABLE mocks"),
    "a missing migration row": lambda: sql("DELETE FROM migrations WHERE name = '0002-check-context'"),
    "the first migration's row missing": lambda: sql("DELETE FROM migrations WHERE name = '0001-checks'"),
    "a table with other columns": lambda: sql("DROP TABLE checks; CREATE TABLE checks (foo, bar)"),
    "a migrations table with other columns": lambda: sql("DROP TABLE migrations; CREATE TABLE migrations (x)"),
    "a folder": lambda: (history.db_file().unlink(), history.db_file().mkdir()),
    "garbage bytes": lambda: history.db_file().write_bytes(bytes(range(256)) * 40),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("first", ["record", "read"])
def test_a_damaged_history_is_set_aside_with_one_line_and_rebuilt(home, capsys, damage, first):
    history.record_check("sdpa", passed=True, slugs=[])
    for suffix in history.JOURNALS:  # a closed database has folded its journal back in
        assert not (home / (history.FILENAME + suffix)).exists()
    DAMAGE[damage]()
    if first == "record":
        assert history.record_check("mha", passed=False, slugs=["missing-scale"]) is True
    else:
        assert history.progress() == {} and history.checks() == [] and history.mocks() == []
        history.record_check("mha", passed=False, slugs=["missing-scale"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: the practice history was unreadable"), err
    assert "history.sqlite3.corrupt" in err
    assert (home / "history.sqlite3.corrupt").exists()  # kept, never deleted
    assert [r["exercise"] for r in history.checks()] == ["mha"]  # a new one, in use
    assert history.record_mock(MOCK_CARD) and [c["id"] for c in history.mocks()] == ["m"]
    assert capsys.readouterr().err == ""  # rebuilt once; quiet from then on


def test_a_newer_versions_extra_columns_are_fine(home, capsys):
    history.record_check("sdpa", passed=True, slugs=[])
    sql("ALTER TABLE checks ADD COLUMN from_the_future TEXT")
    assert history.record_check("sdpa", passed=False, slugs=[]) and len(history.checks()) == 2
    assert capsys.readouterr().err == "" and not (home / "history.sqlite3.corrupt").exists()


def test_rows_and_scorecards_of_the_wrong_type_are_skipped(home):
    history.record_check("sdpa", passed=True, slugs=[])
    history.record_mock(MOCK_CARD)
    sql("""INSERT INTO checks (exercise, at, passed) VALUES (x'00ff', 5, 1);
           INSERT INTO checks (exercise, at, passed) VALUES ('mha', 'yesterday', 1);
           INSERT INTO mocks VALUES ('j', 'sdpa', 1, 3, 0, 1, 3, 4, 5, '{"id": 3}');
           INSERT INTO mocks VALUES ('k', 'sdpa', 1, 4, 0, 1, 3, 4, 5, '[[[[');""")
    assert [r["exercise"] for r in history.checks()] == ["sdpa"]
    assert [c["id"] for c in history.mocks()] == ["m"]


def test_a_seed_sqlite_cannot_hold_warns_instead_of_raising(home, capsys):
    assert history.record_check("sdpa", passed=True, slugs=[], seed=2**70) is False
    assert "could not record the check" in capsys.readouterr().err


FULL_DISK = textwrap.dedent("""
    import resource, signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    from attn_drill import say
    from attn_drill.render import listing
    from attn_drill.store import history
    print(history.record_check("sdpa", passed=True, slugs=[]), history.record_mock(MOCK), history.progress())
""")


def test_a_full_disk_warns_once_and_records_nothing(home):
    """A real failed write: no byte can be written to any file (root or not), only to our pipes."""
    home.mkdir()
    r = subprocess.run([sys.executable, "-c", f"MOCK = {MOCK_CARD!r}\n" + FULL_DISK], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:2] == ["False", "False"]
    assert r.stderr.count("\n") == 1 and "could not record the check" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not list(home.glob("*.corrupt*"))


WRITER = textwrap.dedent("""
    import sys
    from attn_drill import say
    from attn_drill.render import listing
    from attn_drill.store import history
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
