"""The limits a check runs under, as numbers every side knows, and how a long output is cut for a report.

process/sandbox.py puts them in force in the worker; the judge names them in its findings (out of memory, too
much printed); the runner and the report show the cut text. No torch here.
"""

from __future__ import annotations

import re

MEMORY_CAP_GIB = 4
OUTPUT_CAP = 64 << 20  # bytes a file's prints may take
HEAD_LINES, TAIL_LINES, LINE_WIDTH = 10, 10, 240  # what a report shows of them

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # escapes that would drive the user's terminal


def excerpt(text: str) -> str:
    """A long text's first and last lines, each cut to LINE_WIDTH, with no terminal escapes."""
    lines = text.rstrip().splitlines()
    if len(lines) > HEAD_LINES + TAIL_LINES:
        gap = f"... ({len(lines) - HEAD_LINES - TAIL_LINES} lines left out) ..."
        lines = [*lines[:HEAD_LINES], gap, *lines[-TAIL_LINES:]]
    return "\n".join(clean(line) for line in lines)


def clean(line: str) -> str:
    """One line as a report may show it: tabs as spaces, control characters as '?', cut to LINE_WIDTH."""
    line = _CONTROL.sub("?", line.replace("\t", "    "))
    return line if len(line) <= LINE_WIDTH else line[:LINE_WIDTH] + f"... ({len(line) - LINE_WIDTH} more characters)"
