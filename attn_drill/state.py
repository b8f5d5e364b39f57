"""The user's progress: one JSON file under paths.home(). No torch, no rich.

Shape (every field optional, so a hand-edited or older file still loads):

    {"version": 1, "current": "mha",
     "exercises": {"mha": {"file": "/abs/attn-practice/mha.py", "started_at": "2025-...+00:00",
                           "passed": true, "best_seconds": 212.4, "hints_shown": 2,
                           "solution_seen": false,
                           "history": [{"at": "...", "passed": false, "seed": 17,
                                        "finding": "missing-scale", "file": "..."}]}}}

Writes are atomic (a temp file, then os.replace), so a crash never leaves half a file. A missing file
is an empty state; a corrupt one is moved aside to state.json.corrupt (never lost) and we start again.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from attn_drill import paths

VERSION = 1
HISTORY_LIMIT = 200  # per exercise: enough to look back, small enough to stay instant
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

    def status(self, exercise_id: str) -> str:
        e = self.peek(exercise_id)
        if e.get("passed") is True:
            return PASSED
        return STARTED if e.get("started_at") or e.get("file") else NEW

    def best(self, exercise_id: str) -> float | None:
        b = self.peek(exercise_id).get("best_seconds")
        return float(b) if isinstance(b, (int, float)) and not isinstance(b, bool) else None

    def hints_shown(self, exercise_id: str) -> int:
        n = self.peek(exercise_id).get("hints_shown")
        return n if isinstance(n, int) and n > 0 else 0

    def history(self, exercise_id: str) -> list[dict]:
        h = self.peek(exercise_id).get("history")
        return [x for x in h if isinstance(x, dict)] if isinstance(h, list) else []

    # -- updating ------------------------------------------------------------------------------
    def record_start(self, exercise_id: str, file: Path, *, restart_clock: bool = True) -> None:
        """`file` becomes the exercise's file and the exercise the current one."""
        e = self.entry(exercise_id)
        e["file"] = str(Path(file).resolve())
        if restart_clock or not e.get("started_at"):
            e["started_at"] = now()
        self.data["current"] = exercise_id

    def record_check(self, exercise_id: str, file: Path, *, passed: bool, seed: int,
                     finding: str | None) -> float | None:
        """Append to the history; on a pass of the started file, the solve time (else None)."""
        e = self.entry(exercise_id)
        file = Path(file).resolve()
        hist = self.history(exercise_id)
        hist.append({"at": now(), "passed": passed, "seed": seed, "finding": finding, "file": str(file)})
        e["history"] = hist[-HISTORY_LIMIT:]
        if not passed:
            return None
        e["passed"] = True
        if self.file(exercise_id) != file:
            return None  # a pass elsewhere counts, but the clock belongs to the started file
        took = seconds_since(e.get("started_at"))
        if took is not None:
            best = self.best(exercise_id)
            e["best_seconds"] = round(took if best is None else min(best, took), 1)
        return took

    def set_hints_shown(self, exercise_id: str, n: int) -> None:
        self.entry(exercise_id)["hints_shown"] = n


def _set_aside(path: Path) -> Path:
    """Move an unreadable state file out of the way without ever overwriting an older one."""
    target = path.with_name(path.name + ".corrupt")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt.{n}")
        n += 1
    os.replace(path, target)
    return target


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
            aside = _set_aside(path)
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
