"""Where the user is: one JSON file under paths.home(). No torch, no rich.

Shape (every field optional, so a hand-edited or older file still loads):

    {"version": 1, "current": "mha",
     "exercises": {"mha": {"file": "/abs/attn-practice/mha.py", "started_at": "2025-...+00:00",
                           "hints_shown": 2}}}

Only pointers live here: which exercise is current, its file, when the attempt began, hints seen. What
happened (passed, best time, attempts) is the practice history's (history.progress), the one record of
every check, so `list`, `solution`, `stats` and `mock` never disagree.

Writes are atomic (a temp file, then os.replace), so a crash never leaves half a file. A missing file
is an empty state. A damaged one (not JSON, nested too deep to parse, a folder, values of the wrong type)
is moved aside to state.json.corrupt (.1, .2...: never lost) with a one-line warning, and the command goes
on: from scratch, or from the values that were fine. A save that fails (a read-only home, a full disk)
warns once and the command goes on; what it would have saved is lost, nothing else.

`edit()` holds home/.state.lock (flock, our pid written inside) for the few milliseconds of a
read-change-write. If another process holds it for more than LOCK_WAIT seconds, `Locked` says which.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from attn_drill import paths
from attn_drill.store.atomic import is_regular, set_aside
from attn_drill.say import warn

VERSION = 1
NEW, STARTED, PASSED = "new", "started", "passed"
LOCK_WAIT = 5.0  # seconds edit() waits for another process's lock before giving up (tests shrink it)
MAX_BYTES = 1 << 20  # a real progress file is a few KB; anything bigger is not one


class Locked(Exception):
    """Another process held the progress file's lock for LOCK_WAIT seconds."""

    def __init__(self, path: Path, pid: str | None):
        super().__init__(f"{path} is locked by process {pid or '?'}")
        self.path, self.pid = path, pid


def state_file() -> Path:
    return paths.home() / "state.json"


def now() -> str:
    from datetime import datetime, timezone  # not at import: `list` never needs it

    # milliseconds: the stamp names an attempt (history.py), and a reset in the same second is a new one
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def seconds_since(stamp: str | None) -> float | None:
    """Seconds from an ISO stamp to now; None if there is no usable stamp."""
    from datetime import datetime, timezone

    try:
        then = datetime.fromisoformat(stamp)  # type: ignore[arg-type]
        if then.tzinfo is None:
            then = then.replace(tzinfo=timezone.utc)
        return max(0.0, (datetime.now(timezone.utc) - then).total_seconds())
    except (TypeError, ValueError, OverflowError):  # OverflowError: year 1 with a negative offset
        return None


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
        """Seconds since the attempt began, to 0.1 s, if `file` is the exercise's started file (the clock belongs
        to it: a pass elsewhere counts as a pass, with no time); else None."""
        if self.file(exercise_id) != Path(file).resolve():
            return None
        took = seconds_since(self.started_at(exercise_id))
        return None if took is None else round(took, 1)  # rounded once, here: the history keeps this value

    def clear_hints(self, exercise_id: str) -> None:
        """Starting over (`reset`, `start --force`): the hints seen, the exercise's and the mistakes', are unseen."""
        e = self.entry(exercise_id)
        e.pop("hints_shown", None)
        e.pop("mistake_hints", None)

    def set_hints_shown(self, exercise_id: str, n: int) -> None:
        self.entry(exercise_id)["hints_shown"] = n


def load() -> State:
    path = state_file()
    data, damage = _read(path)
    if damage:
        _set_aside(path, f"could not be read ({damage})", "a fresh one started")
        return State()
    if data is None:
        return State()
    clean, wrong = _clean(data)
    if wrong:
        shown = ", ".join(wrong[:3]) + (", ..." if len(wrong) > 3 else "")
        if _set_aside(path, f"had values of the wrong type ({shown})", "the rest kept"):
            _save_quietly(State(clean))  # the next command must not find the same damage
    return State(clean)


def _read(path: Path) -> tuple[dict | None, str | None]:
    """(the parsed object, None), (None, what is wrong with it), or (None, None) when there is nothing to
    read or it cannot be read for now (no permission: not damage, so left alone)."""
    kind = is_regular(path)
    if kind is None:
        return None, None
    if kind is False:
        return None, "it is not a file"
    try:
        if path.stat().st_size > MAX_BYTES:
            return None, f"over {MAX_BYTES // 1024} KiB"
        raw = path.read_bytes()
    except OSError as e:
        warn(f"could not read your progress file {path} ({e.strerror or e}); going on without it.", once="progress")
        return None, None
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:  # nested thousands deep: no progress file looks like that
        return None, "nested too deep"
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None, f"not JSON: {e}"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    return data, None


def _valid_file(v) -> bool:
    return isinstance(v, str) and 0 < len(v) <= 4096 and "\0" not in v


def _valid_stamp(v) -> bool:
    return isinstance(v, str) and seconds_since(v) is not None


def _valid_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1000


FIELDS = {"file": _valid_file, "started_at": _valid_stamp, "hints_shown": _valid_count}


def _clean(data: dict) -> tuple[dict, list[str]]:
    """The data without the values our fields cannot hold, and the names of those dropped. Fields we do
    not know (a newer version's, an older one's) are kept as they are."""
    data, wrong = dict(data), []
    if data.get("current") is not None and not isinstance(data["current"], str):
        wrong.append("current")
        del data["current"]
    exercises = data.get("exercises", {})
    if not isinstance(exercises, dict):
        wrong.append("exercises")
        exercises = {}
    kept = {}
    for ex_id, entry in exercises.items():
        if not isinstance(entry, dict):
            wrong.append(ex_id)
            continue
        kept[ex_id] = {k: v for k, v in entry.items() if k not in FIELDS or FIELDS[k](v)}
        wrong += [f"{ex_id}.{k}" for k in entry if k in FIELDS and not FIELDS[k](entry[k])]
    data["exercises"] = kept
    return data, wrong


def _set_aside(path: Path, problem: str, then: str) -> Path | None:
    """Move the damaged file aside and say so in one line; where it went (None if it could not move)."""
    try:
        aside = set_aside(path)
    except OSError:
        aside = None
    kept = f"moved to {aside}" if aside else "left where it is"
    warn(f"your progress file {path} {problem}; it was {kept} and {then}. Your exercise files are untouched.",
         once=f"damaged {path}")  # a file that cannot be moved (a read-only home) is read twice by `check`
    return aside


def _save_quietly(state: State) -> None:
    try:
        save(state)
    except OSError as e:
        _unsaved(e)


def _unsaved(e: OSError) -> None:
    warn(f"could not save your progress in {paths.home()} ({e.strerror or e}); this command goes on without "
         "saving it.", once="progress")


def save(state: State) -> None:
    from attn_drill.store.atomic import write_atomic

    text = json.dumps(state.data, indent=2, sort_keys=True) + "\n"
    write_atomic(state_file(), text.encode("utf-8"), mode=0o600)


@contextmanager
def edit() -> Iterator[State]:
    """Load, let the caller change, save: kept short so two commands at once rarely lose an update. A save
    that fails (read-only home, full disk) warns once and the caller goes on; Locked if another process
    holds the lock for LOCK_WAIT seconds."""
    with _lock():
        s = load()
        yield s
        _save_quietly(s)


@contextmanager
def _lock() -> Iterator[None]:
    # An advisory lock where the platform has one; elsewhere the atomic replace is the guarantee.
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    from attn_drill.store.atomic import clear_holder, open_lock, write_holder

    fd = open_lock(lock_file())
    if fd is None:  # a read-only home: nothing can be saved either, and the save will say so
        yield
        return
    try:
        _wait_for(fd, fcntl)
        write_holder(fd)
        try:
            yield
        finally:
            clear_holder(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def lock_file() -> Path:
    return paths.home() / ".state.lock"


def _wait_for(fd: int, fcntl) -> None:
    """Take the lock, waiting at most LOCK_WAIT seconds: a holder that never lets go (a stopped process,
    another tool) must not hang `hint` or `start` forever."""
    import time

    from attn_drill.store.atomic import lock_holder

    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise Locked(lock_file(), lock_holder(fd)) from None
            time.sleep(0.05)
