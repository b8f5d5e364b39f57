"""What comes after a pass: progress (n of N passed) and the next exercise with the command that starts it.
No torch, no rich: render.solved draws the line, wrapped between these segments at 80 columns.

The next one is schedule.next_up's, as `attn-drill next` picks it: a review that is due, else the first
exercise of the catalogue's order not yet passed (so an exercise added to catalogue.toml slots in), else the
review due soonest.
"""

from __future__ import annotations

from attn_drill import catalogue
from attn_drill.i18n import t
from attn_drill.say import CLOSING, OPENING, cells, wide
from attn_drill.store import history, schedule


def after_pass() -> list[str]:
    """The segments after "Solved in ...": progress, then what is next and its command."""
    exercises = catalogue.exercises()
    passed = sum(1 for i, p in history.progress().items() if p.passed and i in exercises)
    out = [t("moveon.passed", passed=passed, total=len(exercises))]
    up = schedule.next_up()
    if up is None:
        return out
    ex, kind = up
    if kind == "new":
        return out + [t("moveon.next_new", id=ex.id, minutes=ex.minutes), f"attn-drill start {ex.id}"]
    if kind == "review":
        return out + [t("moveon.next_review", id=ex.id), "attn-drill next"]
    due = schedule.latest()[ex.id]["due"]
    return out + [t("moveon.next_later", id=ex.id, when=schedule.when(due)), "attn-drill next"]


def wrap(segments: list[str], width: int) -> list[str]:
    """The segments joined into lines of at most `width`, never breaking one (a command stays whole): by a space,
    except where Chinese meets Chinese or a full-width mark (完成（目标 …）。已通过), as Chinese is written."""
    lines: list[str] = []
    for seg in segments:
        gap = _gap(lines[-1], seg) if lines else ""
        if lines and cells(lines[-1]) + cells(gap) + cells(seg) <= width:
            lines[-1] += gap + seg
        else:
            lines.append(seg)
    return lines


def _gap(left: str, right: str) -> str:
    a, b = left[-1:], right[:1]
    full_width = (a and a in CLOSING and not a.isascii()) or (b and b in OPENING)
    return "" if full_width or (wide().match(a) and wide().match(b)) else " "
