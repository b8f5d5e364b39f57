"""The practice history: every check and every mock, in SQLite under paths.home(). No torch, no rich.

Why SQLite and not the JSON state: two terminals may check at once (a watch in one, `check` in another),
and the history only grows. WAL mode lets readers and one writer work side by side, `busy_timeout` makes
a second writer wait instead of failing, and every write is one short transaction.

The schema changes only through the named migrations in MIGRATIONS, applied in order, each recorded in
the `migrations` table in the same transaction as its change. A database that is damaged is moved aside
to history.sqlite3.corrupt (.1, .2... never over an older one), with a one-line warning on stderr, and a
new one is made: the old file is kept, never deleted. Damaged means: SQLite reports it corrupt or not a
database, a folder (or anything but a file) in its place, or a schema we did not make (a dropped table, a
migration recorded but not there or there but not recorded, a table with other columns; `SchemaError`).

Recording never breaks a check: callers use `record_check`/`record_mock`, which warn (once per command)
and carry on when the disk is full, the home is read-only or the database stays locked. Reading an
unreadable history warns and reads as empty.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from attn_drill import paths
from attn_drill.store.atomic import is_regular, set_aside
from attn_drill.say import warn

FILENAME = "history.sqlite3"
BUSY_MS = 10_000  # a writer waits this long for another; each write holds the lock for milliseconds
CORRUPT = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB: the file is damaged
SQLITE_ERROR = 1  # while migrating or checking the schema: a schema we did not make (never a lock, a full
# disk or a read-only file: those have codes of their own and are never a reason to set the file aside)
BUSY = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED: another process holds the lock
JOURNALS = ("-wal", "-shm")  # moved along with a corrupt file: stale journals would be replayed into a new one

# (name, SQL). Append only: a released migration is never edited or reordered.
MIGRATIONS: list[tuple[str, str]] = [
    ("0001-checks", """
        CREATE TABLE checks (
            id INTEGER PRIMARY KEY,
            exercise TEXT NOT NULL,
            at REAL NOT NULL,                   -- unix time of the check
            passed INTEGER NOT NULL,
            slugs TEXT NOT NULL DEFAULT '[]',   -- JSON list of the error slugs, likeliest first
            duration REAL                       -- seconds the check itself took
        );
        CREATE INDEX checks_by_exercise ON checks (exercise, at);
    """),
    ("0002-check-context", """
        ALTER TABLE checks ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE checks ADD COLUMN source TEXT NOT NULL DEFAULT 'check';  -- check, watch or mock
        ALTER TABLE checks ADD COLUMN attempt TEXT;        -- the practice file's start stamp, or mock:<id>
        ALTER TABLE checks ADD COLUMN solve_seconds REAL;  -- on a pass: seconds since the attempt began
        ALTER TABLE checks ADD COLUMN seed INTEGER;
        ALTER TABLE checks ADD COLUMN file TEXT;
    """),
    ("0003-mocks", """
        CREATE TABLE mocks (
            id TEXT PRIMARY KEY,
            exercise TEXT NOT NULL,
            started_at REAL NOT NULL,
            ended_at REAL NOT NULL,
            strict INTEGER NOT NULL,
            passed INTEGER NOT NULL,
            seconds_used REAL NOT NULL,
            target_seconds REAL NOT NULL,
            score INTEGER NOT NULL,
            scorecard TEXT NOT NULL             -- the whole scorecard, JSON
        );
        CREATE INDEX mocks_by_time ON mocks (ended_at);
    """),
    ("0004-explains", """
        CREATE TABLE explains (
            id INTEGER PRIMARY KEY,
            exercise TEXT NOT NULL,
            at REAL NOT NULL,
            source TEXT NOT NULL DEFAULT 'explain',  -- explain, or mock (a mock's follow-up after a pass)
            mock TEXT,                               -- the mock's id, for a mock's round
            file TEXT,
            seed INTEGER,
            right INTEGER NOT NULL,
            total INTEGER NOT NULL,
            questions TEXT NOT NULL DEFAULT '[]'     -- JSON: [{"kind", "line", "right"}], in the order asked
        );
        CREATE INDEX explains_by_exercise ON explains (exercise, at);
    """),
    ("0005-reviews", """
        CREATE TABLE reviews (
            id INTEGER PRIMARY KEY,
            exercise TEXT NOT NULL,
            at REAL NOT NULL,
            rating TEXT NOT NULL,      -- good, hard or again (schedule.py)
            attempt TEXT,              -- the attempt it rates: a practice file's start stamp, or mock:<id>
            source TEXT NOT NULL,      -- check, watch, mock or reset
            due REAL NOT NULL,         -- unix time the card is due again
            card TEXT NOT NULL         -- the FSRS card after this review, JSON (fsrs.Card.to_dict)
        );
        CREATE INDEX reviews_by_exercise ON reviews (exercise, at);
    """),
]


def db_file() -> Path:
    return paths.home() / FILENAME


class SchemaError(sqlite3.DatabaseError):
    """The database holds a schema our migrations did not make: set it aside and start a new one."""


def _warn(message: str, once: str | None = None) -> None:
    warn(message, once=once)


def _is_corrupt(e: sqlite3.DatabaseError) -> bool:
    if isinstance(e, SchemaError):
        return True
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in CORRUPT
    return "not a database" in str(e) or "malformed" in str(e)  # Python < 3.11 has no error codes


def _is_schema_error(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF == SQLITE_ERROR
    text = str(e)  # Python < 3.11: by the message
    return any(w in text for w in ("no such table", "no such column", "duplicate column", "already exists",
                                   "has no column"))


def _is_busy(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in BUSY
    return "locked" in str(e) or "busy" in str(e)


def _patiently(step):
    """step(), again while another process holds the lock, up to BUSY_MS in all. SQLite waits by itself
    (busy_timeout) inside a transaction, but some moments answer "database is locked" at once: switching to
    WAL, reading the WAL index while the last connection to close checkpoints it. Seen in CI with four
    writers on a new database."""
    deadline = time.monotonic() + BUSY_MS / 1000
    pause = 0.005
    while True:
        try:
            return step()
        except sqlite3.OperationalError as e:
            if not _is_busy(e) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _open(path: Path) -> sqlite3.Connection:
    return _patiently(lambda: _open_once(path))


def _open_once(path: Path) -> sqlite3.Connection:
    if is_regular(path) is False:  # a folder where the file should be: SQLite would only say "unable to open"
        raise SchemaError(f"{path.name} is not a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_MS / 1000, isolation_level=None)  # we BEGIN ourselves
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")  # with WAL: durable at checkpoints, never corrupt
        migrate(conn)
        check_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def applied(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY rowid")]


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply the migrations this database lacks, in order; returns the names applied now. SchemaError if
    one cannot apply (a migration not recorded whose change is there already, a table of another shape).

    BEGIN IMMEDIATE takes the write lock before reading what is applied, so two processes opening a new
    database at once apply each migration exactly once."""
    try:
        return _migrate(conn)
    except sqlite3.OperationalError as e:
        if not _is_schema_error(e):
            raise
        expected_schema()  # our migrations apply to an empty database (else this raises: a bug of ours,
        raise SchemaError(f"its schema is not ours: {e}") from e  # never the user's file to set aside)


def _migrate(conn: sqlite3.Connection) -> list[str]:
    conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    if {name for name, _ in MIGRATIONS} <= set(applied(conn)):
        return []  # the usual case: no write lock taken just to open the history
    done_now = []
    for name, sql in MIGRATIONS:
        with transaction(conn):
            if conn.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                continue
            for statement in _statements(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, time.time()))
            done_now.append(name)
    return done_now


_expected: dict[tuple, dict[str, set[str]]] = {}


def expected_schema() -> dict[str, set[str]]:
    """Table -> columns, as the migrations make them (run once, in memory)."""
    key = tuple(MIGRATIONS)
    if key not in _expected:
        mem = sqlite3.connect(":memory:", isolation_level=None)
        try:
            _migrate(mem)
            _expected[key] = _tables(mem)
        finally:
            mem.close()
    return _expected[key]


def _tables(conn: sqlite3.Connection) -> dict[str, set[str]]:
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {n: {r[1] for r in conn.execute("SELECT * FROM pragma_table_info(?)", (n,))} for n in names}


def check_schema(conn: sqlite3.Connection) -> None:
    """SchemaError unless every table and column the migrations make is there (a dropped table, a table
    made by someone else). More is fine: a newer version's migrations add columns."""
    have = _tables(conn)
    for table, columns in expected_schema().items():
        if table not in have:
            raise SchemaError(f"its table {table} is missing")
        missing = columns - have[table]
        if missing:
            raise SchemaError(f"its table {table} lacks the columns {', '.join(sorted(missing))}")


def _statements(sql: str) -> list[str]:
    # executescript would COMMIT our transaction first; our migrations have no ';' inside a statement
    lines = [line.split("--", 1)[0] for line in sql.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def connect(*, reading: bool = False) -> Iterator[sqlite3.Connection]:
    """An open, migrated connection; a damaged database is set aside (with a warning) and made anew.
    `reading`: in a read-only home, open the file as it is (WAL mode would need to create files next to it)."""
    path = db_file()
    try:
        conn = _open(path)
    except sqlite3.DatabaseError as e:
        if reading and _cannot_write(e) and _exists():
            conn = _open_as_is(path)
        elif not _is_corrupt(e):
            raise
        else:
            moved = set_aside(path, extras=JOURNALS)
            _warn(f"the practice history was unreadable ({e}); moved it to {moved} and started a new one.")
            conn = _open(path)
    try:
        yield conn
    finally:
        conn.close()


READ_ONLY = {8, 14, 23}  # SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_AUTH: a read-only home or file


def _cannot_write(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in READ_ONLY
    return "unable to open" in str(e) or "readonly" in str(e)


def _open_as_is(path: Path) -> sqlite3.Connection:
    """The file read-only and unlocked (SQLite's immutable): for reading where nothing can be written."""
    from urllib.parse import quote

    conn = sqlite3.connect(f"file:{quote(str(path))}?immutable=1", uri=True, isolation_level=None)
    try:
        check_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _write(what: str, sql: str, values: tuple) -> bool:
    """One INSERT; on a corrupt file set it aside and retry once. False (and a warning) if it failed."""
    for attempt in (1, 2):
        try:
            _patiently(lambda: _insert(sql, values))
            return True
        except sqlite3.DatabaseError as e:
            if attempt == 1 and _is_corrupt(e) and os.path.lexists(db_file()):
                try:
                    moved = set_aside(db_file(), extras=JOURNALS)
                except OSError as moving:
                    e = moving
                else:
                    _warn(f"the practice history was damaged ({e}); moved it to {moved} and started a new one.")
                    continue
            _unrecorded(what, e)
        except (sqlite3.Error, OSError, OverflowError) as e:  # OverflowError: a number SQLite cannot hold
            _unrecorded(what, e)
        return False
    return False


def _insert(sql: str, values: tuple) -> None:
    with connect() as conn, transaction(conn):
        conn.execute(sql, values)


def _unrecorded(what: str, e: Exception) -> None:
    reason = getattr(e, "strerror", None) or e
    _warn(f"could not record the {what} in the practice history ({reason}): your progress is not saved; "
          "this command goes on.", once="progress")


def _unreadable(e: Exception) -> None:
    reason = getattr(e, "strerror", None) or e
    _warn(f"could not read the practice history ({reason}); going on without it.", once="progress")


def record_check(exercise: str, *, passed: bool, slugs: list[str], warnings: list[str] = (),
                 duration: float | None = None, source: str = "check", attempt: str | None = None,
                 solve_seconds: float | None = None, seed: int | None = None, file: str | None = None,
                 at: float | None = None) -> bool:
    return _write("check", """
        INSERT INTO checks (exercise, at, passed, slugs, duration, warnings, source, attempt, solve_seconds,
                            seed, file)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (exercise, time.time() if at is None else at, int(passed), json.dumps(list(slugs)), duration,
         json.dumps(list(warnings)), source, attempt, solve_seconds, seed, file))


def record_report(rep, *, source: str, attempt: str | None, solve_seconds: float | None) -> bool:
    """Record a check's Report (attn_drill.report.Report); a file not started yet (its TODOs still raise) is no
    check of anything, nor is one the checker itself failed on (internal-error): not recorded (False)."""
    if not rep.judged:
        return False
    rep.sort_findings()
    return record_check(rep.exercise, passed=rep.passed, slugs=[f.slug for f in rep.errors],
                        warnings=[f.slug for f in rep.findings if f.level != "error"],
                        duration=round(rep.seconds, 3), source=source, attempt=attempt,
                        solve_seconds=None if solve_seconds is None else round(solve_seconds, 1),
                        seed=rep.seed, file=rep.file)


def record_mock(card: dict) -> bool:
    return _write("mock", """
        INSERT OR REPLACE INTO mocks (id, exercise, started_at, ended_at, strict, passed, seconds_used,
                                      target_seconds, score, scorecard)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (card["id"], card["exercise"], card["started_at"], card["ended_at"], int(card["strict"]),
         int(card["passed"]), card["seconds_used"], card["target_seconds"], card["score"], json.dumps(card)))


def record_explain(exercise: str, questions: list[dict], *, source: str = "explain", mock: str | None = None,
                   file: str | None = None, seed: int | None = None, at: float | None = None) -> bool:
    """One explain round: each question's kind (shape, breaks, cost, concept), line and whether it was right."""
    right = sum(bool(q.get("right")) for q in questions)
    return _write("explain round", """
        INSERT INTO explains (exercise, at, source, mock, file, seed, right, total, questions)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (exercise, time.time() if at is None else at, source, mock, file, seed, right, len(questions),
         json.dumps([{"kind": q.get("kind"), "line": q.get("line"), "right": bool(q.get("right"))}
                     for q in questions])))


def record_review(exercise: str, rating: str, *, attempt: str | None, source: str, at: float, due: float,
                  card: dict) -> bool:
    """One spaced-review rating and the card after it (schedule.review)."""
    return _write("review", """
        INSERT INTO reviews (exercise, at, rating, attempt, source, due, card) VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (exercise, at, rating, attempt, source, due, json.dumps(card)))


# -- reading -------------------------------------------------------------------------------------
def _rows(sql: str, args: tuple = (), quiet: bool = False) -> list[dict]:
    """The rows a query returns, as dicts; none when nothing was recorded yet (no file is created just to
    read it) or the file cannot be read (said once). Rows whose exercise or time has the wrong type are left
    out: SQLite keeps any type in any column, and such a row was written by someone else. `quiet`: an unreadable
    file reads as empty without the warning (for a reader that only adds to what it shows)."""
    if not _exists():
        return []
    try:
        with connect(reading=True) as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute(sql, args).fetchall()
    except (sqlite3.Error, OSError) as e:
        if not quiet:
            _unreadable(e)
        return []
    return [d for d in map(dict, rows) if isinstance(d["exercise"], str) and _number(d["at"])]


def checks(exercise: str | None = None, quiet: bool = False) -> list[dict]:
    """Every recorded check, oldest first (slugs and warnings as lists)."""
    where, args = ("WHERE exercise = ?", (exercise,)) if exercise else ("", ())
    out = []
    for d in _rows(f"SELECT * FROM checks {where} ORDER BY at, id", args, quiet):
        d["passed"] = bool(d["passed"])
        d["slugs"], d["warnings"] = _list(d["slugs"]), _list(d["warnings"])
        out.append(d)
    return out


def reviews(exercise: str | None = None) -> list[dict]:
    """Every spaced-review rating, oldest first, its card as a dict; rows someone else wrote are left out."""
    where, args = ("WHERE exercise = ?", (exercise,)) if exercise else ("", ())
    out = []
    for d in _rows(f"SELECT * FROM reviews {where} ORDER BY at, id", args):
        try:
            d["card"] = json.loads(d["card"]) if isinstance(d["card"], str) else None
        except (ValueError, RecursionError):
            d["card"] = None
        if _number(d["due"]) and d["rating"] in ("good", "hard", "again"):
            out.append(d)
    return out


@dataclass(frozen=True)
class Progress:
    """One exercise's record, from its checks. A pass of any file counts, a mock's too; only an attempt
    (a practice file from `start`/`reset` until the next, or one mock) has a solve time."""
    checks: int = 0
    attempts: int = 0
    passes: int = 0  # attempts with a passing check
    passed: bool = False  # any passing check, of any file
    solve_seconds: tuple[float, ...] = ()  # each passed attempt's fastest solve, fastest first

    @property
    def best(self) -> float | None:
        return self.solve_seconds[0] if self.solve_seconds else None


def progress() -> dict[str, Progress]:
    """Per exercise checked at least once, its Progress: the one answer to "passed? best time?" that
    `list`, `solution`, `stats` and mock's pick all use. An unreadable history warns and reads as empty."""
    if not _exists():
        return {}  # nothing recorded yet: do not create a file just to read it
    try:
        with connect(reading=True) as conn:
            totals = conn.execute("""
                SELECT exercise, COUNT(*), COUNT(DISTINCT attempt),
                       COUNT(DISTINCT CASE WHEN passed THEN attempt END), MAX(passed)
                FROM checks GROUP BY exercise""").fetchall()
            solves = conn.execute("""
                SELECT exercise, MIN(solve_seconds) AS s FROM checks
                WHERE passed AND attempt IS NOT NULL AND solve_seconds IS NOT NULL
                GROUP BY exercise, attempt ORDER BY s""").fetchall()
    except (sqlite3.Error, OSError) as e:
        _unreadable(e)
        return {}
    times: dict[str, list[float]] = {}
    for exercise, seconds in solves:
        times.setdefault(exercise, []).append(seconds)
    return {ex: Progress(checks=n, attempts=attempts, passes=passes, passed=bool(passed),
                         solve_seconds=tuple(times.get(ex, ())))
            for ex, n, attempts, passes, passed in totals}


def progress_of(exercise: str) -> Progress:
    return progress().get(exercise, Progress())


def explains() -> list[dict]:
    """Every explain round, oldest first, its questions as a list of {"kind", "line", "right"}."""
    out = []
    for d in _rows("SELECT * FROM explains ORDER BY at, id"):
        try:
            qs = json.loads(d["questions"]) if isinstance(d["questions"], str) else []
        except (ValueError, RecursionError):
            qs = []
        d["questions"] = [q for q in qs if isinstance(q, dict) and isinstance(q.get("kind"), str)] \
            if isinstance(qs, list) else []
        out.append(d)
    return out


def mocks(limit: int | None = None) -> list[dict]:
    """The scorecards of finished mocks, oldest first (the last `limit` of them)."""
    if not _exists():
        return []
    try:
        with connect(reading=True) as conn:
            rows = conn.execute("SELECT scorecard FROM mocks ORDER BY ended_at DESC, rowid DESC"
                                + (" LIMIT ?" if limit else ""), (limit,) if limit else ()).fetchall()
    except (sqlite3.Error, OSError) as e:
        _unreadable(e)
        return []
    cards = []
    for (text,) in reversed(rows):
        try:
            card = json.loads(text) if isinstance(text, str) else None
        except (ValueError, RecursionError):
            continue
        if _card_ok(card):
            cards.append(card)
    return cards


CARD_NUMBERS = ("ended_at", "seconds_used", "target_seconds", "score")


def _card_ok(card) -> bool:
    """A scorecard `stats` can show: ours, not a row someone else wrote (SQLite checks no JSON)."""
    return (isinstance(card, dict) and all(_number(card.get(k)) for k in CARD_NUMBERS)
            and isinstance(card.get("id"), str) and isinstance(card.get("exercise"), str))


def _number(v) -> bool:
    import math

    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _exists() -> bool:
    return os.path.lexists(db_file())


def _list(text: str | None) -> list[str]:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []
