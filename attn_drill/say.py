"""The plain-text output every command shares, without rich (so `list` and `hint` stay fast): `printable`,
the one place text from outside (file names, what the user's code raised or printed, files on disk) is made
safe for a terminal, and `warn`, one escaped line on stderr. Imports nothing of attn_drill."""

from __future__ import annotations

import functools
import re
import sys

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


def cells(text: str) -> int:
    """The terminal columns `text` takes: two for a wide character (Chinese), one for the rest."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


# characters that take two terminal cells, between which a line may break (CJK, Hangul, full-width forms)
WIDE_CHARS = "\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6"
CLOSING = "，。、；：！？）》」』】,.;:!?)"  # never starts a line
OPENING = "（《「『【"  # never ends one


@functools.cache
def pattern(text: str) -> re.Pattern:
    """re.compile(text), on first use: a class of the wide characters takes ~7 ms to compile, which `list` and
    `--help` (drawn without wrapping Chinese) should not pay."""
    return re.compile(text)


def wide() -> re.Pattern:
    """One wide character."""
    return pattern(f"[{WIDE_CHARS}]")


# one unit: a run of non-space, non-wide characters (a word, a glued phrase, code), one wide character, or spaces
_UNIT = f"[^ {WIDE_CHARS}]+|[{WIDE_CHARS}]| +"


def wrap_cells(line: str, width: int, indent: str = "", measure=cells, blanks: str = " ") -> str:
    """One line of mixed Chinese and code wrapped to `width` terminal cells (`measure`: a wide character takes
    two), between words or between wide characters, never inside a word, never before a closing mark (，。) or
    after an opening one; each continuation line starts with `indent` and none with `blanks`. The one wrapping
    rule of every screen, plain (fill) or drawn with rich (render.report)."""
    merged: list[str] = []
    for u in pattern(_UNIT).findall(line):
        if merged and (u[0] in CLOSING or merged[-1][-1] in OPENING) and not merged[-1].isspace():
            merged[-1] += u
        else:
            merged.append(u)
    out, row, used = [], "", 0
    for u in merged:
        w = measure(u)
        if row.strip(blanks) and not u.isspace() and used + w > width:
            out.append(row.rstrip(" "))
            row, used = indent, measure(indent)
        if out and row == indent:  # no blanks at the start of a continuation line
            u = u.lstrip(blanks)
            if not u:
                continue
            w = measure(u)
        row += u
        used += w
    out.append(row.rstrip(" "))
    return "\n".join(out)


def fill(text: str, width: int, indent: str = "") -> str:
    """`text` wrapped to `width` columns, each line starting with `indent` (the first too), its own white space
    run together: wrap_cells, for the screens drawn without rich."""
    return wrap_cells(indent + " ".join(text.split()), width, indent)
