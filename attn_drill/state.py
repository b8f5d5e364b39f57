"""Where the user is: one JSON file under paths.home(). No torch, no rich.

Shape (every field optional, so a hand-edited or older file still loads):

    {"version": 1, "current": "mha",
     "exercises": {"mha": {"file": "/abs/attn-practice/mha.py", "started_at": "2025-...+00:00",
                           "hints_shown": 2}}}

Only pointers live here: which exercise is current, its file, when the attempt began, hints seen. What
happened (passed, best time, attempts) is the practice history's (history.progress), the one record of
every check, so `list`, `solution`, `stats` and `mock` never disagree.

Writes are atomic (a temp file, then os.replace), so a crash never leaves half a file. A missing file
is an empty state; a corrupt one is moved aside to state.json.corrupt (never lost) and we start again.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from attn_drill import paths
from attn_drill.atomic import set_aside

VERSION = 1
NEW, STARTED, PASSED = "new", "started", "passed"


def state_file() -> Path:
    return paths.home() / "state.json"


def now() -> str:
    from datetime import datetime, timezone  # not at import: `list` never needs it

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def seconds_since(stamp: str | None) -> float | None:
    """Seconds from an ISO stamp to now; None if there is no usable stamp."""
    from datetime import datetime, timezone

    try:
        then = datetime.fromisoformat(stamp)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    return max(0.0, (datetime.now(timezone.utc) - then).total_seconds())


class State:
    """The parsed file, with the few questions and updates the commands need."""

    def __init__(self, data: dict | None = None):
        data = data if isinstance(data, dict) else {}
        exercises = data.get("exercises")
        self.data = {**data, "version": VERSION,
                     "exercises": exercises if isinstance(exercises, dict) else {}}

    # -- reading -------------------------------------------------------------------------------
    @property
    def current(self) -> str | None:
        cur = self.data.get("current")
        return cur if isinstance(cur, str) else None

    def entry(self, exercise_id: str) -> dict:
        """The exercise's record (created empty on first use; a malformed one is replaced)."""
        ex = self.data["exercises"]
        if not isinstance(ex.get(exercise_id), dict):
            ex[exercise_id] = {}
        return ex[exercise_id]

    def peek(self, exercise_id: str) -> dict:
        """The record without creating it."""
        e = self.data["exercises"].get(exercise_id)
        return e if isinstance(e, dict) else {}

    def file(self, exercise_id: str) -> Path | None:
        f = self.peek(exercise_id).get("file")
        return Path(f) if isinstance(f, str) and f else None

    def status(self, exercise_id: str, *, passed: bool) -> str:
        """new, started or passed; whether it was passed is the history's to say (history.progress)."""
        if passed:
            return PASSED
        e = self.peek(exercise_id)
        return STARTED if e.get("started_at") or e.get("file") else NEW

    def started_at(self, exercise_id: str) -> str | None:
        """When the exercise's current attempt began (its file was started or reset)."""
        stamp = self.peek(exercise_id).get("started_at")
        return stamp if isinstance(stamp, str) and stamp else None

    def hints_shown(self, exercise_id: str) -> int:
        n = self.peek(exercise_id).get("hints_shown")
        return n if isinstance(n, int) and n > 0 else 0

    # -- updating ------------------------------------------------------------------------------
    def record_start(self, exercise_id: str, file: Path, *, restart_clock: bool = True) -> None:
        """`file` becomes the exercise's file and the exercise the current one."""
        e = self.entry(exercise_id)
        e["file"] = str(Path(file).resolve())
        if restart_clock or not e.get("started_at"):
            e["started_at"] = now()
        self.data["current"] = exercise_id

    def solve_seconds(self, exercise_id: str, file: Path) -> float | None:
        """Seconds since the attempt began, if `file` is the exercise's started file (the clock belongs
        to it: a pass elsewhere counts as a pass, with no time); else None."""
        if self.file(exercise_id) != Path(file).resolve():
            return None
        return seconds_since(self.started_at(exercise_id))

    def set_hints_shown(self, exercise_id: str, n: int) -> None:
        self.entry(exercise_id)["hints_shown"] = n


def load() -> State:
    path = state_file()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return State()
    except OSError:
        return State()  # unreadable (permissions, a folder...): work from empty, leave it alone
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        try:
            aside = set_aside(path)
        except OSError:
            aside = None
        _warn(path, aside)
        return State()
    return State(data)


def _warn(path: Path, aside: Path | None) -> None:
    """Say so on stderr (never stdout: --json output stays clean); the user's exercise files are not touched."""
    import sys

    kept = f"moved to {aside}" if aside else "left where it is"
    sys.stderr.write(f"warning: your progress file {path} could not be read; it was {kept} and a fresh one "
                     f"started. Your exercise files are untouched.\n")


def save(state: State) -> None:
    from attn_drill.atomic import write_atomic

    text = json.dumps(state.data, indent=2, sort_keys=True) + "\n"
    write_atomic(state_file(), text.encode("utf-8"), mode=0o600)


@contextmanager
def edit() -> Iterator[State]:
    """Load, let the caller change, save: kept short so two commands at once rarely lose an update."""
    with _lock():
        s = load()
        yield s
        save(s)


@contextmanager
def _lock() -> Iterator[None]:
    # An advisory lock where the platform has one; elsewhere the atomic replace is the guarantee.
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    home = paths.home()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".state.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
