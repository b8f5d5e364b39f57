"""`attn-drill list` as plain aligned text: rich's import alone would double the command's time.

Colour is plain ANSI, only on a terminal and never with NO_COLOR set.

Also the two pieces of plain-text output every command shares without rich: `printable`, the one place
text from outside (file names, what the user's code raised or printed, files on disk) is made safe for a
terminal, and `warn`, one escaped line on stderr.
"""

from __future__ import annotations

import os
import re
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


# Characters a terminal acts on instead of showing: C0 and C1 controls (ESC starts a sequence that can
# recolour, clear or retitle; a lone CSI byte \x9b does too on some terminals; \r rewrites the line), the
# bidirectional overrides that reorder what is shown, line separators, and the surrogates that stand for
# bytes of a file name that are not UTF-8 (they could not even be encoded for printing).
_UNSAFE = "\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_ONE_LINE = re.compile(f"[\x00-\x1f{_UNSAFE}]")
_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_UNSAFE}]")  # keeps \t and \n
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    c = match.group()
    o = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    if 0xDC80 <= o <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): show the byte
        return f"\\x{o - 0xDC00:02x}"
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def printable(text: object, *, multiline: bool = False, limit: int | None = None) -> str:
    """`text` with every character a terminal would act on shown as an escape (\\x1b, \\r, \\u202e).
    multiline keeps newlines and tabs; `limit` shortens the middle of a longer result (a 5000-byte path)."""
    s = (_LINES if multiline else _ONE_LINE).sub(_escape, str(text))
    if limit is not None and len(s) > limit:
        keep = max(limit - 1, 2)
        s = s[:keep - keep // 3] + "…" + s[len(s) - keep // 3:]
    return s


_warned: set[str] = set()


def reset_warnings() -> None:
    """A new command: every warning may be said once again (tests run many commands in one process)."""
    _warned.clear()


def warn(message: str, *, once: str | None = None) -> None:
    """One line on stderr (never stdout: --json output stays clean), escaped; with `once`, only the first
    warning of that kind in this command (a read-only home would otherwise say so at every write)."""
    if once is not None:
        if once in _warned:
            return
        _warned.add(once)
    try:
        sys.stderr.write(f"warning: {printable(message)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: nobody to tell
        pass


def use_colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def table(exercises: Iterable["Exercise"], state: "State", progress: dict[str, "Progress"],
          colour: bool = False) -> str:
    """`progress` is history.progress(): passed and best come from there, started from `state`."""
    header = ("", "id", "title", "difficulty", "target", "status", "best")
    rows = []
    for ex in exercises:
        done = progress.get(ex.id)
        status = state.status(ex.id, passed=bool(done and done.passed))
        best = done.best if done else None
        in_time = best is not None and best <= ex.minutes * 60
        rows.append([("▸" if ex.id == state.current else "", ""), (ex.id, "cyan"), (ex.title, ""),
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
