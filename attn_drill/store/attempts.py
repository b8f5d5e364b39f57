"""Your past attempts: every checked version of an exercise's practice file, kept once per content, with
the verdict of its latest check. No torch, no rich.

Under paths.home()/attempts/<id>/: one `<hash>.py` per distinct content and `index.json`, the list of
attempts (oldest first) and the last failing check (for `attn-drill repro`). Every write is atomic
(atomic.write_atomic) and under a lock, so two terminals checking at once never lose an entry. The store is
bounded: at most MAX_KEPT attempts per exercise (the oldest go first), files over MAX_BYTES are not kept.
A store that cannot be written (a read-only home) costs a warning, never a verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from attn_drill import paths
from attn_drill.store.atomic import open_lock, set_aside, write_atomic
from attn_drill.say import warn

MAX_KEPT = 50  # attempts per exercise; the oldest go first
MAX_BYTES = 256 * 1024  # a practice file larger than this is not kept (none of ours comes near)


@dataclass
class Attempt:
    n: int  # its number, stable: `attempts ID N`
    hash: str  # sha256 of the content, first 16 hex digits: the blob's name
    at: float  # when this content was first checked (epoch seconds)
    passed: bool  # the verdict of its latest check
    slug: str = ""  # the first error of that check, "" when it passed
    checks: int = 1  # how many times this content was checked
    file: str = ""  # the practice file it was read from


@dataclass
class Failure:
    """The last failing check, enough to replay it: which content, which seed, which case."""
    hash: str
    seed: int
    slug: str
    stage: str  # the stage that failed
    detail: str  # that stage's detail (for values: the case and the first mismatch)
    case: int | None  # the failing case's index in the spec's cases (values stage), else None
    at: float
    file: str


@dataclass
class Index:
    attempts: list[Attempt] = field(default_factory=list)
    last_failure: Failure | None = None
    next_n: int = 1


def folder(exercise_id: str) -> Path:
    return paths.home() / "attempts" / exercise_id


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()[:16]


# -- reading -------------------------------------------------------------------------------------------
def load(exercise_id: str) -> Index:
    """The exercise's attempts; an empty index when there are none or the file is damaged (set aside)."""
    path = folder(exercise_id) / "index.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        index = Index(attempts=[Attempt(**a) for a in raw["attempts"]],
                      last_failure=Failure(**raw["last_failure"]) if raw.get("last_failure") else None,
                      next_n=int(raw["next_n"]))
        _valid(index)
        return index
    except FileNotFoundError:
        return Index()
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:  # deep nesting too
        _damaged(path, e if not isinstance(e, RecursionError) else ValueError("nested too deeply"))
        return Index()


def _valid(index: Index) -> None:
    """A ValueError for values of the wrong type, or a hash that is not one (it names a file)."""
    def is_hash(h):
        return isinstance(h, str) and len(h) == 16 and all(c in "0123456789abcdef" for c in h)

    for a in index.attempts:
        if not (type(a.n) is int and isinstance(a.at, (int, float)) and is_hash(a.hash) and isinstance(a.slug, str)
                and type(a.checks) is int and isinstance(a.passed, bool)):
            raise ValueError(f"attempt {a.n!r} holds values of the wrong type")
    f = index.last_failure
    if f is not None and not (is_hash(f.hash) and type(f.seed) is int and (f.case is None or type(f.case) is int)
                              and all(isinstance(v, str) for v in (f.slug, f.stage, f.detail, f.file))):
        raise ValueError("the last failure holds values of the wrong type")


def content(exercise_id: str, attempt: Attempt) -> bytes | None:
    try:
        return (folder(exercise_id) / f"{attempt.hash}.py").read_bytes()
    except OSError:
        return None


def find(index: Index, n: int) -> Attempt | None:
    return next((a for a in index.attempts if a.n == n), None)


# -- writing -------------------------------------------------------------------------------------------
def keep(exercise_id: str, path: Path, rep, data: bytes | None = None) -> Attempt | None:
    """Keep the checked version of `path` (its bytes `data`, read now if None) with the report's verdict;
    the attempt, or None when it could not be kept (a warning says why)."""
    try:
        data = Path(path).read_bytes() if data is None else data
    except OSError:
        return None
    if len(data) > MAX_BYTES:
        return None
    try:
        with _locked(exercise_id):
            index = load(exercise_id)
            attempt = _add(exercise_id, index, data, rep, str(path))
            _save(exercise_id, index)
        return attempt
    except OSError as e:
        warn(f"could not save this attempt in {folder(exercise_id)} ({e.strerror or e}); the verdict stands.",
             once="progress")  # one warning per command that progress is not saved: history says it first
        return None


def _add(exercise_id: str, index: Index, data: bytes, rep, file: str) -> Attempt:
    h, now = digest(data), time.time()
    errors = [f for f in rep.findings if f.level == "error"]
    slug = errors[0].slug if errors and not rep.passed else ""
    attempt = next((a for a in index.attempts if a.hash == h), None)
    if attempt is None:
        write_atomic(folder(exercise_id) / f"{h}.py", data)
        attempt = Attempt(index.next_n, h, now, rep.passed, slug, 0, file)
        index.attempts.append(attempt)
        index.next_n += 1
    attempt.passed, attempt.slug, attempt.checks = rep.passed, slug, attempt.checks + 1
    if not rep.passed:
        failed = next((s for s in rep.stages if s.status == "fail"), None)
        index.last_failure = Failure(h, rep.seed, slug, failed.name if failed else "", failed.detail if failed else "",
                                     getattr(rep, "case", None), now, file)
    _trim(exercise_id, index)
    return attempt


def _trim(exercise_id: str, index: Index) -> None:
    """At most MAX_KEPT attempts: drop the oldest, and their blobs unless the last failure still needs one."""
    while len(index.attempts) > MAX_KEPT:
        old = index.attempts.pop(0)
        if not (index.last_failure and index.last_failure.hash == old.hash):
            try:
                (folder(exercise_id) / f"{old.hash}.py").unlink()
            except OSError:
                pass


def _save(exercise_id: str, index: Index) -> None:
    data = {"attempts": [asdict(a) for a in index.attempts], "next_n": index.next_n,
            "last_failure": asdict(index.last_failure) if index.last_failure else None}
    write_atomic(folder(exercise_id) / "index.json", (json.dumps(data, indent=1) + "\n").encode())


@contextmanager
def _locked(exercise_id: str):
    """One writer at a time per exercise (flock, released on exit, even by a killed process)."""
    import fcntl

    folder(exercise_id).mkdir(parents=True, exist_ok=True)
    fd = open_lock(folder(exercise_id) / ".lock")
    if fd is None:
        raise OSError("the attempts' lock file cannot be opened")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _damaged(path: Path, e: Exception) -> None:
    try:
        aside = set_aside(path)
    except OSError:
        return
    warn(f"the attempts index {path} was damaged ({e}); moved it to {aside} and started a new one.")
