"""`attn-drill list` as plain aligned text: rich's import alone would double the command's time.

Colour is plain ANSI, only on a terminal and never with NO_COLOR set.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise
    from attn_drill.history import Progress
    from attn_drill.state import State

COLOURS = {"bold": "1", "dim": "2", "green": "32", "yellow": "33", "cyan": "1;36"}
STATUS_COLOUR = {"new": "dim", "started": "yellow", "passed": "green"}


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


def use_colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


DUE = "*"  # the marker of an exercise due for review (schedule.due), beside ▸ for the current one


def table(exercises: Iterable["Exercise"], state: "State", progress: dict[str, "Progress"],
          colour: bool = False, due: Iterable[str] = ()) -> str:
    """`progress` is history.progress(): passed and best come from there, started from `state`; `due`: the ids
    due for review, marked."""
    due = set(due)
    header = ("", "id", "title", "difficulty", "target", "status", "best")
    rows = []
    for ex in exercises:
        done = progress.get(ex.id)
        status = state.status(ex.id, passed=bool(done and done.passed))
        best = done.best if done else None
        in_time = best is not None and best <= ex.minutes * 60
        mark = ("▸" if ex.id == state.current else "") + (DUE if ex.id in due else "")
        rows.append([(mark, "yellow" if ex.id in due else ""), (ex.id, "cyan"), (ex.title, ""),
                     (ex.difficulty, ""), (f"{ex.minutes} min", ""), (status, STATUS_COLOUR.get(status, "")),
                     (duration(best), "green" if in_time else "")])
    widths = [max(len(h), *(len(r[i][0]) for r in rows)) for i, h in enumerate(header)]
    right = {4, 6}  # numbers line up on the right

    def cell(i, text, style):
        padded = text.rjust(widths[i]) if i in right else text.ljust(widths[i])
        return f"\033[{COLOURS[style]}m{padded}\033[0m" if colour and style else padded

    lines = ["attn-drill exercises", "  ".join(cell(i, h, "bold") for i, h in enumerate(header)).rstrip()]
    lines += ["  ".join(cell(i, t, s) for i, (t, s) in enumerate(r)).rstrip() for r in rows]
    return "\n".join(lines) + "\n"
