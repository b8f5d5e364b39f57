"""After a check: what it leaves in the user's data, one call for check, watch and mock alike.

`after_check` is called once the verdict is drawn. It writes the history row, rates the review card, keeps the
judged bytes as an attempt (the practice file only), and returns what the footer draws: the solve time (on the
attempt's first pass only), the best time, and the line after a pass. A report that judged nothing (the
skeleton's TODOs, our own internal-error) leaves nothing. Neither torch nor rich here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise
    from attn_drill.report import Report
    from attn_drill.store.state import State


@dataclass
class Recorded:
    """What a check left, for its footer."""
    recorded: bool = False  # a row in the history
    kept: bool = False  # the judged bytes are an attempt (`attn-drill attempts`, `repro`)
    solved: float | None = None  # seconds from the attempt's start, on its first pass only
    best: float | None = None  # the best solve time so far, this one included
    after: list[str] = field(default_factory=list)  # after a pass: progress, what is next (moveon.after_pass)


@dataclass
class Clock:
    """Which attempt a check belongs to, and its clock (not a kept version: that is store.attempts.Attempt)."""
    id: str | None  # None: a file that is no attempt of the exercise (someone else's, a copy)
    seconds: float | None  # since the attempt began, if it is timed
    practice: bool = False  # the exercise's practice file (the one `start` wrote): its versions are kept


def practice_attempt(ex: "Exercise", path: Path, st: "State") -> Clock:
    """The attempt of the exercise's practice file, timed from its start; for another file, no attempt."""
    if st.file(ex.id) != Path(path).resolve():
        return Clock(None, None)
    return Clock(st.started_at(ex.id), st.solve_seconds(ex.id, path), practice=True)


def read_bytes(path: Path) -> bytes | None:
    """The bytes a check is about, read before it starts (None if unreadable, or not a regular file, which a
    read could block on: the check will say why)."""
    import stat

    try:
        return Path(path).read_bytes() if stat.S_ISREG(Path(path).stat().st_mode) else None
    except OSError:
        return None


def _judged(rep: "Report", data: bytes | None) -> bool:
    """`data` are the bytes the checker ran (its report says which): else the file was saved between our read
    and the checker's, and neither version is kept with this verdict."""
    from attn_drill.say import warn
    from attn_drill.store import attempts

    if data is None or not rep.digest or attempts.digest(data) == rep.digest:
        return data is not None
    warn("your file changed while it was being checked: this verdict is not kept as an attempt "
         "(check again to keep the version you have now).", once="changed")
    return False


def after_check(ex: "Exercise", path: Path, rep: "Report", *, source: str, attempt: Clock,
                data: bytes | None = None, repeat: bool = False) -> Recorded:
    """Note a check (`source`: check, watch or mock). `data`: the bytes that were judged (never read again here,
    so a save during the check is not kept with this verdict). `repeat`: the same content was checked just before
    in this session (watch, mock): it counts once, and only its attempt is kept again."""
    from attn_drill.practice import moveon
    from attn_drill.store import attempts, history, schedule

    done = Recorded()
    if not rep.judged:
        return done
    first_pass = rep.passed and not repeat and attempt.id is not None and not any(
        c["passed"] for c in history.checks(ex.id, quiet=True) if c["attempt"] == attempt.id)
    if not repeat:
        took = attempt.seconds if first_pass else None
        done.recorded = history.record_report(rep, source=source, attempt=attempt.id, solve_seconds=took)
        schedule.after_check(ex, rep, attempt=attempt.id, seconds=took, source=source)
        done.solved = took
    if attempt.practice and _judged(rep, data):
        done.kept = attempts.keep(ex.id, Path(path), rep, data) is not None
    if rep.passed and not repeat:
        best = history.progress_of(ex.id).best
        if done.solved is not None:  # this pass counts even when it could not be recorded
            best = round(done.solved, 1) if best is None else min(best, round(done.solved, 1))
        done.best = best
        done.after = moveon.after_pass() if source != "mock" else []
    return done
