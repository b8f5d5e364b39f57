"""The timed mock interview: pick an exercise, write a fresh file, count down, check on save, ask three
follow-up questions, score. No torch, no rich: what the user sees goes through a `ui` object
(render_mock.MockScreen), and keys come from a `Keys` object.

- The session in progress is one JSON file, home/mock.json, rewritten (atomically) at every step. Its
  start time is stored, so quitting the command and running it again resumes the same countdown. A
  damaged one (not JSON, values of the wrong type) is set aside with a warning; one that cannot be
  written (a read-only home, a full disk) warns once and the mock goes on, only it cannot be resumed.
- One mock at a time: the running command holds an exclusive flock on home/mock.lock, with its pid
  written inside for the message the second one shows. The kernel drops the lock if the process dies.
- Time comes from `now()`: ATTN_DRILL_CLOCK may name a file holding a fake "now" (seconds since the
  epoch) so that tests move the clock instead of waiting for minutes.
- After a pass, the follow-up asks about the user's own mock file (explain.py: shapes at their lines, a cost,
  why, what breaks), topped up with bank questions to N_FOLLOW_UP; without a pass, N_QUESTIONS bank ones.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from attn_drill import catalogue, paths
from attn_drill.i18n import t
from attn_drill.practice import explain, questions, record
from attn_drill.store import history, schedule
from attn_drill.catalogue import Exercise
from attn_drill.practice.mock_answers import N_FOLLOW_UP, N_QUESTIONS

CLOCK_ENV = schedule.CLOCK_ENV  # a file holding a fake "now", for tests
POLL = 0.05  # seconds between looks at the keyboard, the file and the clock
MOCK_DIR = "mock"  # inside the practice folder: ./attn-practice/mock/<file>
# The score, out of 100: a pass 50, time 20 (all of it up to the target, none from twice the target),
# questions 30; each hint costs 5.
PASS_POINTS, TIME_POINTS, QUESTION_POINTS, HINT_COST = 50, 20, 30, 5
MAX_LIMIT = 24 * 3600.0  # a session file with a longer clock is not one we wrote


def now() -> float:
    """Seconds since the epoch, or the fake time in the file ATTN_DRILL_CLOCK names (schedule.now)."""
    return schedule.now()


@dataclass
class Session:
    id: str
    exercise: str
    file: str  # the mock's own file, absolute
    started_at: float  # now() when the countdown began
    limit_seconds: float  # the countdown (--minutes, else the target)
    target_seconds: float  # the catalogue's target time
    strict: bool
    seed: int | None
    reason: str = ""  # why this exercise was picked
    phase: str = "coding"  # coding, then questions, then done
    checks: int = 0
    hints: int = 0  # every hint shown, each costs HINT_COST: the mistakes' and the exercise's
    mistake_hints: dict = field(default_factory=dict)  # {slug: how many of its hints were shown}
    mistakes: list[str] = field(default_factory=list)  # error slugs of every failing check, in order
    last: dict | None = None  # the last check: {"passed", "slugs"}
    seen: list | None = None  # the file's version (watch.signature) last checked, or the fresh skeleton's
    checked: str | None = None  # the content hash (workspace.digest) of the file last checked
    ended_by: str | None = None  # pass, time or quit
    ended_at: float | None = None
    question_ids: list[str] = field(default_factory=list)
    answers: list[int | None] = field(default_factory=list)
    explain: list[dict] = field(default_factory=list)  # after a pass: questions on the user's own file, asked first
    explain_answers: list[str | None] = field(default_factory=list)

    def left(self) -> float:
        return self.limit_seconds - (now() - self.started_at)

    @property
    def used(self) -> float:
        end = self.ended_at if self.ended_at is not None else now()
        return max(0.0, min(end - self.started_at, self.limit_seconds))


class MockBusy(Exception):
    def __init__(self, pid: str):
        super().__init__(pid)
        self.pid = pid


# -- the session file and the lock ---------------------------------------------------------------------
def session_file() -> Path:
    return paths.home() / "mock.json"


def load() -> Session | None:
    """The mock in progress, if any. A damaged file is moved aside (mock.json.corrupt, never over an older
    one) with a warning, and ignored."""
    from attn_drill.store.atomic import is_regular

    path = session_file()
    kind = is_regular(path)
    if kind is None:
        return None
    try:
        if kind is False:
            raise ValueError("it is not a file")
        session = Session(**json.loads(path.read_text(encoding="utf-8")))
        _check_session(session)
        return session
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, RecursionError) as e:
        _set_aside(path, e)
        return None


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _count(v) -> bool:
    return isinstance(v, int) and _number(v)


def _strings(v) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _optional(check):
    return lambda v: v is None or check(v)


# What the code does arithmetic and look-ups on; a session file with anything else is not one we wrote.
SESSION_FIELDS = {
    "id": lambda v: isinstance(v, str),
    "exercise": lambda v: isinstance(v, str) and catalogue.get(v) is not None,
    "file": lambda v: isinstance(v, str) and bool(v) and "\0" not in v,
    "started_at": _number,
    "limit_seconds": lambda v: _number(v) and 0 < v <= MAX_LIMIT,
    "target_seconds": _number,
    "strict": lambda v: isinstance(v, bool),
    "seed": _optional(lambda v: _count(v) and v < 2**63),
    "reason": lambda v: isinstance(v, str),
    "phase": lambda v: v in ("coding", "questions", "done"),
    "checks": _count,
    "hints": _count,
    "mistake_hints": lambda v: isinstance(v, dict) and all(isinstance(k, str) and _count(n) for k, n in v.items()),
    "mistakes": _strings,
    "last": _optional(lambda v: isinstance(v, dict) and _strings(v.get("slugs"))),
    "seen": _optional(lambda v: isinstance(v, list)),
    "checked": _optional(lambda v: isinstance(v, str)),
    "ended_by": _optional(lambda v: isinstance(v, str)),
    "ended_at": _optional(_number),
    "question_ids": _strings,
    "answers": lambda v: isinstance(v, list) and all(a is None or type(a) is int for a in v),
    "explain": lambda v: isinstance(v, list) and all(explain.well_formed(q) for q in v),
    "explain_answers": lambda v: isinstance(v, list) and all(a is None or isinstance(a, str) for a in v),
}


def _check_session(s: Session) -> None:
    """ValueError naming the fields that hold something else than what SESSION_FIELDS allows."""
    wrong = [name for name, ok in SESSION_FIELDS.items() if not ok(getattr(s, name))]
    if wrong:
        raise ValueError(f"values of the wrong type ({', '.join(wrong[:3])})")


def _set_aside(path: Path, why: Exception) -> None:
    from attn_drill.store.atomic import set_aside
    from attn_drill.say import warn

    try:
        where = f"moved it to {set_aside(path)}"
    except OSError:
        where = "left it where it is"
    warn(f"the mock in progress, {path}, could not be read ({why}); {where} and started none.")


def save(session: Session) -> None:
    """Write the session for a later resume; if it cannot be written, say so once and go on."""
    from attn_drill.store.atomic import write_atomic

    try:
        write_atomic(session_file(), (json.dumps(asdict(session), indent=2) + "\n").encode("utf-8"), mode=0o600)
    except OSError as e:
        from attn_drill.say import warn

        warn(f"could not save the mock in {paths.home()} ({e.strerror or e}): it goes on, but cannot be resumed "
             "if you leave it.", once="progress")


def drop() -> None:
    try:
        session_file().unlink()
    except FileNotFoundError:
        pass
    except OSError:  # a read-only home: it was never saved there either
        pass


@contextmanager
def lock() -> Iterator[None]:
    """Hold home/mock.lock while a mock runs; MockBusy(pid) if another process holds it."""
    import fcntl

    from attn_drill.store.atomic import clear_holder, lock_holder, open_lock, write_holder

    fd = open_lock(paths.home() / "mock.lock")
    if fd is None:  # a read-only home: no session file either, so no second mock could resume this one
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise MockBusy(lock_holder(fd) or "?") from None
        write_holder(fd)
        try:
            yield
        finally:
            clear_holder(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# -- starting ------------------------------------------------------------------------------------------
def pick(rng: random.Random, exercises: list[Exercise] | None = None) -> tuple[Exercise, str]:
    """The one most overdue for review (schedule.py, as `next` and `list` see it), else untried first, then never
    passed, then best time over the target, then the rest; random among equals. Returns the exercise and why.
    "Passed" and "best" are history.progress's, as in `list`."""
    exercises = exercises if exercises is not None else list(catalogue.exercises().values())
    by_id = {e.id: e for e in exercises}
    overdue = [i for i in schedule.due() if i in by_id]
    if overdue:
        return by_id[overdue[0]], t("mock.why_due")
    done = history.progress()

    def rank(ex: Exercise) -> int:
        if ex.id not in done:
            return 0
        if not done[ex.id].passed:
            return 1
        best = done[ex.id].best
        return 2 if best is None or best > ex.minutes * 60 else 3

    reasons = [t("mock.why_untried"), t("mock.why_unpassed"), t("mock.why_slow"), t("mock.why_random")]
    top = min(rank(e) for e in exercises)
    chosen = rng.choice(sorted((e for e in exercises if rank(e) == top), key=lambda e: e.id))
    return chosen, reasons[top]


def mock_file(ex: Exercise) -> Path:
    """./attn-practice/mock/<file>: never the practice file, which lives one folder up."""
    return (Path(paths.DEFAULT_PRACTICE_DIR) / MOCK_DIR / ex.file).absolute()


def begin(ex: Exercise, *, minutes: float | None, strict: bool, seed: int | None, reason: str):
    """Write a fresh skeleton in the mock folder (an older mock file there is backed up first) and
    start the clock. Returns (session, workspace.Written)."""
    from attn_drill.store import workspace

    written = workspace.write_skeleton(ex, mock_file(ex), replace=True)
    start = now()
    session = Session(
        id=time.strftime("%Y%m%d-%H%M%S", time.gmtime(start)) + f"-{ex.id}", exercise=ex.id,
        file=str(written.path), started_at=start, limit_seconds=float(minutes or ex.minutes) * 60,
        target_seconds=ex.minutes * 60.0, strict=strict, seed=seed, reason=reason)
    session.seen = _version(written.path)  # the skeleton itself is not a save
    save(session)
    return session, written


# -- running -------------------------------------------------------------------------------------------
def run(session: Session, ui, keys, *, answers: list[str] | None = None) -> int:
    """Take the session from wherever it stands to its scorecard. Ctrl-C leaves it to be resumed
    (exit 130); the end returns 0 on a pass, 1 otherwise."""
    from attn_drill.practice.watch import Checker

    ex = catalogue.get(session.exercise)
    try:
        if session.phase == "coding":
            with Checker(ex.id, seed=session.seed) as checker:
                _coding(session, ex, ui, keys, checker)
        if session.phase == "questions":
            _questions(session, ui, keys, answers)
    except KeyboardInterrupt:
        ui.left(session)
        return 130
    card = scorecard(session)
    history.record_mock(card)
    if not card["passed"]:  # ran out, or ended without a pass: an Again for its review card
        schedule.abandoned(ex, attempt=f"mock:{session.id}", source="mock")
    if session.explain:
        history.record_explain(session.exercise, explain.kinds_missed(session.explain, session.explain_answers),
                               source="mock", mock=session.id, file=session.file, seed=session.seed)
    drop()
    ui.scorecard(card, ex)
    return 0 if card["passed"] else 1


def _coding(session: Session, ex: Exercise, ui, keys, checker) -> None:
    from attn_drill.practice.watch import Watcher

    path = Path(session.file)
    watcher = Watcher(path)
    watcher.checked = tuple(session.seen) if session.seen else None  # after a restart: saved since?
    ui.coding(session, ex)
    while True:
        left = session.left()
        if left <= 0:
            return _end(session, ex, ui, checker, "time")
        ui.tick(session, left)
        key = keys.get(POLL)
        if key == "q":
            return _end(session, ex, ui, checker, "quit")
        if key == "h":
            _hint(session, ex, ui)
        version = watcher.poll()
        if (version or key == "c") and session.strict:
            ui.strict_no_feedback()
        elif version or key == "c":
            if _check(session, ex, ui, checker):
                return _end(session, ex, ui, checker, "pass")


def _hint(session: Session, ex: Exercise, ui) -> None:
    """After a failing check, the named mistake's hints first (as `attn-drill hint` gives them), then the
    exercise's own; each costs HINT_COST."""
    from attn_drill.practice import hints

    if session.strict:
        return ui.strict_no_hints()
    last = session.last or {}
    slug = last["slugs"][0] if not last.get("passed") and last.get("slugs") else None
    mine = hints.for_mistakes().get(slug, ()) if slug else ()
    seen = session.mistake_hints.get(slug, 0) if slug else 0
    if seen < len(mine):
        session.mistake_hints[slug] = seen + 1
        session.hints += 1
        save(session)
        return ui.hint(mine[seen], seen + 1, len(mine), about=slug)
    general = session.hints - sum(session.mistake_hints.values())
    if general >= len(ex.hints):
        return ui.hint(None, general, len(ex.hints))
    session.hints += 1
    save(session)
    ui.hint(ex.hints[general], general + 1, len(ex.hints))


def _version(path: Path) -> list | None:
    from attn_drill.practice.watch import signature

    sig = signature(path)
    return list(sig) if sig else None


def _check(session: Session, ex: Exercise, ui, checker) -> bool:
    """Check the mock file, show the report (unless strict) and note it (once per content); True on a pass."""
    from attn_drill.store.workspace import digest

    ui.checking(session)
    version, content = _version(Path(session.file)), digest(Path(session.file))
    rep = checker.check(Path(session.file))
    at = now()
    again = content is not None and content == session.checked  # `c` twice on the same file counts once
    slugs = [f.slug for f in rep.errors]
    if not again:
        session.checks += 1
        session.mistakes += slugs
    session.last, session.seen, session.checked = {"passed": rep.passed, "slugs": slugs}, version, content
    save(session)
    ui.report(session, rep, ex)  # the verdict first, then what it leaves
    attempt = record.Clock(f"mock:{session.id}", min(at - session.started_at, session.limit_seconds))
    record.after_check(ex, Path(session.file), rep, source="mock", attempt=attempt, repeat=again)
    return rep.passed


def _end(session: Session, ex: Exercise, ui, checker, why: str) -> None:
    """The coding part is over: a final check if the file changed since the last one (in strict mode,
    the one and only check), then on to the questions."""
    end = now() if why != "time" else session.started_at + session.limit_seconds
    ui.ended(session, why)
    version = _version(Path(session.file))
    if why != "pass" and version is not None and (session.strict or version != session.seen):
        _check(session, ex, ui, checker)
    session.ended_by, session.ended_at = why, end
    rng = random.Random(session.seed)
    asked = {q for card in history.mocks(limit=5) for q in _ids(card)}
    n = N_QUESTIONS
    if session.last and session.last["passed"]:
        session.explain = _explain(session, ex, ui, checker, asked)
        asked |= {q["bank_id"] for q in session.explain if q.get("bank_id")}
        n = max(0, N_FOLLOW_UP - len(session.explain))
    session.question_ids = [q.id for q in questions.pick(ex.concepts, n, rng=rng, avoid=asked)] if n else []
    session.phase = "questions"
    save(session)


def _ids(card: dict) -> list:
    q = card.get("questions")
    return q.get("ids", []) if isinstance(q, dict) else []


def _explain(session: Session, ex: Exercise, ui, checker, asked: set[str]) -> list[dict]:
    """The questions on the user's own passing file, traced in the mock's warm pool; [] if that fails."""
    ui.tracing()
    seed = session.seed if session.seed is not None else random.randrange(10_000)
    r = explain.build(Path(session.file), ex.id, seed, pool=checker.pool, avoid=asked)
    return r.questions


def _questions(session: Session, ui, keys, scripted: list[str] | None) -> None:
    """The follow-up: the questions on the user's own file first (after a pass), then the bank's."""
    bank = questions.bank()
    asked = [bank[i] for i in session.question_ids if i in bank]
    first, total = len(session.explain), len(session.explain) + len(asked)
    if scripted is not None:  # held to the questions before one is scored (BadAnswers: none is)
        from attn_drill.practice.mock_answers import against

        against(session.explain, asked, scripted)
    for i, q in enumerate(session.explain):
        if i < len(session.explain_answers):
            continue  # answered before a restart
        ui.explain_question(q, i + 1, total)
        if scripted is not None:
            given = scripted[i] if i < len(scripted) else None
        else:
            given = keys.answer(ui.echo, q)
        ui.explain_answer_given(q, given, scripted=scripted is not None)
        session.explain_answers.append(given)
        save(session)
        ui.explain_answered(q, given)
    for i, q in enumerate(asked):
        if i < len(session.answers):
            continue  # answered before a restart
        ui.question(q, first + i + 1, total)
        if scripted is not None:
            given = scripted[first + i] if first + i < len(scripted) else None
            choice = int(given) if given and given.isdigit() else None
        else:
            choice = keys.choice(ui.echo, len(q.choices))
        ui.answer_given(choice, scripted=scripted is not None)
        session.answers.append(choice)
        save(session)
        ui.answered(q, choice)
    session.phase = "done"
    save(session)


def scorecard(session: Session) -> dict:
    bank = questions.bank()
    asked = [bank[i] for i in session.question_ids if i in bank]
    right = sum(q.is_right(a) for q, a in zip(asked, session.answers))
    mine = explain.kinds_missed(session.explain, session.explain_answers + [None] * len(session.explain))
    explained = sum(q["right"] for q in mine)
    follow_ups = len(asked) + len(mine)  # the questions' 30 points are shared by every follow-up
    passed = bool(session.last and session.last["passed"])
    used, target = session.used, session.target_seconds
    points = {
        "pass": PASS_POINTS if passed else 0,
        "time": round(TIME_POINTS * max(0.0, min(1.0, (2 * target - used) / target))) if passed else 0,
        "questions": round(QUESTION_POINTS * (right + explained) / follow_ups) if follow_ups else 0,
        "hints": -HINT_COST * session.hints,
    }
    return {
        "id": session.id, "exercise": session.exercise, "strict": session.strict,
        "started_at": session.started_at, "ended_at": session.ended_at or now(), "ended_by": session.ended_by,
        "passed": passed, "final_slugs": (session.last or {}).get("slugs", []),
        "seconds_used": round(used, 1), "target_seconds": target, "limit_seconds": session.limit_seconds,
        "checks": session.checks, "hints": session.hints,
        "questions": {"ids": [q.id for q in asked], "answers": session.answers[:len(asked)],
                      "right": right, "total": len(asked)},
        "explained": {"questions": mine, "answers": session.explain_answers[:len(mine)], "right": explained,
                      "total": len(mine)},
        "mistakes": [{"slug": s, "count": n} for s, n in Counter(session.mistakes).items()],
        "points": points, "score": max(0, min(100, sum(points.values()))),
    }


class Keys:
    """Keys from the terminal, one at a time (cbreak mode, no Enter needed), or characters from a pipe.
    When stdin is closed or missing (a script), no key ever comes."""

    def __init__(self, fd: int | None):
        self.fd, self.pending, self.closed, self._saved = fd, "", fd is None, None

    def __enter__(self) -> "Keys":
        if self.fd is not None and os.isatty(self.fd):
            import termios
            import tty

            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc) -> None:
        if self._saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    def get(self, timeout: float) -> str | None:
        """The next key (lower case), waiting at most `timeout`; None if none came."""
        import select

        if not self.pending and not self.closed:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if ready:
                data = os.read(self.fd, 64)
                self.closed = not data
                self.pending += data.decode("utf-8", "replace")
        elif self.closed:
            time.sleep(timeout)
        while self.pending:
            key, self.pending = self.pending[0], self.pending[1:]
            if not key.isspace():
                return key.lower()
        return None

    def line(self, echo, keep_empty: bool = False) -> str | None:
        """A line typed at the keyboard, each key passed to `echo` as it comes (cbreak mode does not echo):
        Enter ends it, Backspace takes a character back. `keep_empty`: an Enter on a blank line does not end it
        (a stray Enter answers nothing). None if stdin closes first."""
        typed = ""
        while True:
            if not self.pending and not self.closed:
                self._fill(0.5)
                continue
            if not self.pending:
                return typed or None
            key, self.pending = self.pending[0], self.pending[1:]
            if key in "\r\n":
                if keep_empty and not typed.strip():
                    continue
                echo("\n")
                return typed
            if key in "\x7f\b":
                if typed:
                    typed = typed[:-1]
                    echo("\b \b")
            elif key.isprintable():
                typed += key
                echo(key)

    def _fill(self, timeout: float) -> None:
        """Wait at most `timeout` for input and keep it in self.pending, as it was typed."""
        import select

        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            data = os.read(self.fd, 64)
            self.closed = not data
            self.pending += data.decode("utf-8", "replace")

    def answer(self, echo, q: dict) -> str | None:
        """An answer to `q` typed, then Enter (the one way every question is answered, as in `explain`): an
        Enter on an empty line answers nothing and is ignored, an answer explain.refusal refuses is asked for
        again, `-` skips the question. None if skipped or stdin closes first."""
        while True:
            typed = self.line(echo, keep_empty=True)
            given = None if typed is None else typed.strip()
            if given is None or given == "-":
                return None
            why = explain.refusal(q, given)
            if why is None:
                return given
            echo(why + t("mock.refused"))

    def choice(self, echo, n: int) -> int | None:
        """A choice 1..n of a bank question, typed then Enter; None if skipped or stdin closes first."""
        given = self.answer(echo, {"choices": [None] * n})
        return None if given is None else int(given)
