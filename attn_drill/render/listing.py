"""`attn-drill list` as plain aligned text: rich's import alone would double the command's time.

Colour is plain ANSI, only on a terminal and never with NO_COLOR set.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise
    from attn_drill.store.history import Progress
    from attn_drill.store.state import State

COLOURS = {"bold": "1", "dim": "2", "green": "32", "yellow": "33", "cyan": "1;36"}
STATUS_COLOUR = {"new": "dim", "started": "yellow", "passed": "green"}


def duration(seconds: float | None) -> str:
    """A time in the language in use: 45s, 3m 05s, 1h 02m (45 秒, 3 分 05 秒, 1 小时 02 分); "-" for none."""
    from attn_drill.i18n import t

    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return t("duration.s", s=s)
    if s < 3600:
        return t("duration.m_s", m=s // 60, s=s % 60)
    return t("duration.h_m", h=s // 3600, m=s % 3600 // 60)


def use_colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


DUE = "*"  # the marker of an exercise due for review (schedule.due), beside ▸ for the current one


def table(exercises: Iterable["Exercise"], state: "State", progress: dict[str, "Progress"],
          colour: bool = False, width: int | None = None, due: Iterable[str] = ()) -> str:
    """`progress` is history.progress(): passed and best come from there, started from `state`; `due`: the ids
    due for review, marked. The table fits `width` columns (the terminal's, 80 at most): a title too long for its
    column wraps between words."""
    from attn_drill.i18n import t

    due = set(due)
    header = ("", "id", t("list.title"), t("list.level"), t("list.target"), t("list.status"), t("list.best"))
    rows = []
    for ex in exercises:
        done = progress.get(ex.id)
        status = state.status(ex.id, passed=bool(done and done.passed))
        best = done.best if done else None
        in_time = best is not None and best <= ex.minutes * 60
        mark = ("▸" if ex.id == state.current else "") + (DUE if ex.id in due else "")
        rows.append([(mark, "yellow" if ex.id in due else ""), (ex.id, "cyan"), (ex.title, ""),
                     (t(f"difficulty.{ex.difficulty}"), ""), (t("list.minutes", minutes=ex.minutes), ""),
                     (t(f"list.{status}"), STATUS_COLOUR.get(status, "")),
                     (duration(best), "green" if in_time else "")])
    return _aligned(header, rows, right={4, 6}, wrap=2, width=width or terminal_width(), colour=colour)


def terminal_width() -> int:
    """The terminal's width (a pipe: $COLUMNS, else 80), 40 at least."""
    import shutil

    return max(40, shutil.get_terminal_size((80, 24)).columns)


def _aligned(header: tuple, rows: list, *, right: set, wrap: int, width: int, colour: bool) -> str:
    """Columns two spaces apart, numbers (`right`) on the right; column `wrap` gets what is left of `width`,
    its cells wrapped between words onto lines of their own."""
    from attn_drill.i18n import t
    from attn_drill.say import cells, fill

    widths = [max(cells(h), *(cells(r[i][0]) for r in rows)) for i, h in enumerate(header)]
    rest = sum(w for i, w in enumerate(widths) if i != wrap) + 2 * (len(header) - 1)
    widths[wrap] = max(12, min(widths[wrap], width - rest))

    def cell(i, text, style):
        pad = " " * max(0, widths[i] - cells(text))  # a Chinese character takes two columns
        padded = pad + text if i in right else text + pad
        return f"\033[{COLOURS[style]}m{padded}\033[0m" if colour and style else padded

    def lines(r):
        parts = fill(r[wrap][0], widths[wrap]).split("\n") or [""]  # between words: gpt-oss stays whole
        first = [(parts[0], s) if i == wrap else (t, s) for i, (t, s) in enumerate(r)]
        out = ["  ".join(cell(i, t, s) for i, (t, s) in enumerate(first)).rstrip()]
        indent = sum(widths[:wrap]) + 2 * wrap
        out += [" " * indent + cell(wrap, p, r[wrap][1]).rstrip() for p in parts[1:]]
        return out

    out = [t("list.heading"), "  ".join(cell(i, h, "bold") for i, h in enumerate(header)).rstrip()]
    for r in rows:
        out += lines(r)
    return "\n".join(out) + "\n"
