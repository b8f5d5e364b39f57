"""What comes after a pass: progress (n of N passed) and the next exercise with the command that starts it.
No torch, no rich: render.solved draws the line, wrapped between these segments at 80 columns.

The next one is schedule.next_up's, as `attn-drill next` picks it: a review that is due, else the first
exercise of the catalogue's order not yet passed (so an exercise added to catalogue.toml slots in), else the
review due soonest.
"""

from __future__ import annotations

from attn_drill import catalogue
from attn_drill.i18n import t
from attn_drill.say import cells
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
    """The segments joined by spaces into lines of at most `width`, never breaking one (a command stays whole)."""
    lines: list[str] = []
    for seg in segments:
        if lines and cells(lines[-1]) + 1 + cells(seg) <= width:
            lines[-1] += " " + seg
        else:
            lines.append(seg)
    return lines
