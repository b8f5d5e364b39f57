"""Load a user's file as a fresh module, turning every way it can fail into a finding in words:
an empty file, a syntax error (line, column, the line itself), a file that is not UTF-8 (which encoding
it looks like, and how to re-save it), and anything raised while importing it."""

from __future__ import annotations

import ast
import codecs
import importlib.util
import io
import sys
import tokenize
import traceback
from pathlib import Path

from attn_drill import findings, limits
from attn_drill.i18n import t
from attn_drill.report import Finding


def _say(key: str, /, **params) -> str:
    """This module's sentence `key` (i18n/<lang>/evidence/core.toml, [load])."""
    return t(f"evidence.core.load.{key}", **params)


def parse(path: Path, tag: str) -> Finding | None:
    """Read and compile the user's file without running any of it: the finding that stops it there, or None.
    No torch needed: the runner asks this before it starts a worker (a syntax error costs no torch import)."""
    source, bad = read_source(path)
    return bad or compiled(source, path, tag)[1]


def compiled(source: str, path: Path, tag: str):
    """(code object, None), or (None, the finding that stops the file before any of it runs)."""
    try:
        tree = ast.parse(source, str(path))
        code = compile(tree, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:  # the last two: absurdly nested code
        if "\0" in source:  # Python says "cannot contain null bytes" with no line: find it
            line, where = _where_byte(source.encode("utf-8"), b"\0")
            return None, findings.make("syntax-error", _say("nul_byte", where=where), line=line, score=1.0)
        if isinstance(e, SyntaxError):
            return None, syntax_finding(e)
        return None, findings.make("syntax-error", _say("cannot_parse", error=describe(e)), score=1.0)
    if not tree.body:
        return None, _nothing_defined(source, tag)
    return code, None


def load(path: Path, tag: str, read: dict | None = None) -> tuple[object | None, Finding | None]:
    """Read the user's file once, then compile and run those very bytes as a fresh module: (module, None) or
    (None, finding). `read`, if given, gets "digest": the sha256 (16 hex digits) of the bytes that ran, so
    that what is kept as an attempt is what was judged, whatever was saved meanwhile."""
    import hashlib

    try:
        raw = path.read_bytes()
    except OSError as e:  # gone or unreadable since the command looked at it
        return None, findings.make("syntax-error", _say("unreadable", error=describe(e)), score=1.0)
    if read is not None:
        read["digest"] = hashlib.sha256(raw).hexdigest()[:16]
    source, bad = decoded(path, raw)
    if bad:
        return None, bad
    code, bad = compiled(source, path, tag)
    if bad:
        return None, bad
    spec = importlib.util.spec_from_file_location(f"attn_drill_user_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    # The file's own folder comes first, as for a script: its helper modules import, also from inside a
    # function called later. The worker checks this one file only, so no other file sees them.
    sys.path.insert(0, str(path.parent))
    try:
        exec(code, module.__dict__)
    except BaseException as e:  # noqa: BLE001 - user code may raise anything, SystemExit included
        return None, exception_finding(e, path, _say("while_importing"))
    return module, None


# --- source problems -------------------------------------------------------------------------------------

def read_source(path: Path) -> tuple[str | None, Finding | None]:
    """The text of the file as Python reads it (a UTF-8 BOM or a coding line is honoured)."""
    try:
        raw = path.read_bytes()
    except OSError as e:  # gone or unreadable since the command looked at it
        return None, findings.make("syntax-error", _say("unreadable", error=describe(e)), score=1.0)
    return decoded(path, raw)


def decoded(path: Path, raw: bytes) -> tuple[str | None, Finding | None]:
    """The file's bytes as text, as Python decodes a source file, or the finding that says why they are not."""
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None, not_utf8(path, raw, 0)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError:  # no usable coding line and bytes that are not UTF-8 in the first two lines
        encoding = "utf-8"
    try:
        return raw.decode(encoding), None
    except UnicodeDecodeError as e:
        return None, not_utf8(path, raw, e.start)
    except LookupError:  # a coding line naming an encoding Python does not know
        return None, findings.make("syntax-error", _say("unknown_encoding", encoding=repr(encoding)), line=1,
                                   score=1.0)


def not_utf8(path: Path, raw: bytes, pos: int) -> Finding:
    name, codec = guess_encoding(raw)
    line, column = _line_column(raw, pos)
    what = _say("bom") if pos == 0 else _say("byte_at", byte=f"0x{raw[pos]:02x}", line=line, column=column)
    resave = (f"python -c \"import pathlib; p = pathlib.Path(r'{path}'); "
              f"p.write_text(p.read_text(encoding='{codec}'), encoding='utf-8')\"")
    evidence = _say("not_utf8", what=what, name=name, resave=resave)
    return findings.make("syntax-error", evidence, line=line, score=1.0)


def guess_encoding(raw: bytes) -> tuple[str, str]:
    """(how to say it, the codec that reads it) for bytes that are not UTF-8."""
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return _say("utf32_bom"), "utf-32"
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return _say("utf16_bom"), "utf-16"
    if raw and raw.count(0) >= len(raw) // 4:
        le = raw[1::2].count(0) > raw[::2].count(0)
        return _say("utf16_no_bom"), "utf-16-le" if le else "utf-16-be"
    try:
        raw.decode("cp1252")
        return _say("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return _say("latin1"), "latin-1"


def syntax_finding(e: SyntaxError) -> Finding:
    where = _say("line_column", line=e.lineno, column=e.offset) if e.lineno and e.offset else (
        _say("line", line=e.lineno) if e.lineno else _say("somewhere"))
    evidence = _say("syntax", type=type(e).__name__, msg=e.msg, where=where) + _pointed(e)
    return findings.make("syntax-error", evidence, line=e.lineno, score=1.0)


CARET_LINE = 60  # a report's evidence is about 63 columns wide at 80: a longer line would wrap, the caret not


def _pointed(e: SyntaxError) -> str:
    """The line itself, and a caret under the column; a long line is shown as a window around the column, so
    that neither wraps and the caret stays under its character."""
    text = (e.text or "").rstrip("\r\n").expandtabs()
    if not text.strip():
        return ""
    shown = limits.clean(text.strip())
    lead = len(text) - len(text.lstrip())
    col = e.offset - 1 - lead if e.offset else None  # 0-based, in `shown`
    same_line = e.end_lineno == e.lineno and e.end_offset and e.offset and e.end_offset > e.offset
    width = max(1, min(e.end_offset - e.offset, len(shown))) if same_line else 1
    if len(shown) > CARET_LINE:
        start = 0 if col is None else max(0, min(col - CARET_LINE // 2, len(shown) - CARET_LINE + 2))
        head = "…" if start else ""
        window = shown[start:start + CARET_LINE - 2]  # room for a "…" at either end
        tail = "…" if start + len(window) < len(shown) else ""
        if col is not None:
            col = col - start + len(head)
        shown = head + window + tail
        width = min(width, max(1, len(shown) - (col or 0)))
    out = f"\n    {shown}"
    if col is not None and 0 <= col <= len(shown):
        out += "\n    " + " " * col + "^" * width
    return out


def _where_byte(raw: bytes, byte: bytes) -> tuple[int | None, str]:
    pos = raw.find(byte)
    if pos < 0:
        return None, ""
    line, column = _line_column(raw, pos)
    return line, _say("at_line_column", line=line, column=column)


def _line_column(raw: bytes, pos: int) -> tuple[int, int]:
    return raw.count(b"\n", 0, pos) + 1, pos - (raw.rfind(b"\n", 0, pos) + 1) + 1


_NO_NAME = object()


def _nothing_defined(source: str, tag: str) -> Finding:
    from attn_drill.judge.specs import SPECS  # here: the specs import torch-heavy modules

    name = getattr(SPECS.get(tag), "name", _NO_NAME)
    name = _say("exercise_code") if name is _NO_NAME else name
    said = _say("empty", name=name) if not source.strip() else _say("only_comments", name=name)
    return findings.make("missing-name", said, score=1.0, name=name)


# --- exceptions ------------------------------------------------------------------------------------------

def user_line(exc: BaseException, path: Path) -> tuple[int | None, str]:
    """The last line of the user's file in the traceback, and its text."""
    target = str(path.resolve())
    line, text = None, ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == target or str(Path(frame.filename).resolve()) == target:
            line, text = frame.lineno, (frame.line or "").strip()
    return line, text


def describe(exc: BaseException) -> str:
    """`Type: first line of the message`, and for the exceptions that are about the process, the reason."""
    try:
        msg = str(exc).strip().splitlines()
    except BaseException:  # noqa: BLE001 - a user's exception whose __str__ itself raises
        msg = [_say("unprintable")]
    first = msg[0] if msg else ""
    if len(first) > 300:
        first = first[:300] + "..."
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    why = reason(exc, first)
    return _say("described", error=text, why=why) if why else text


def reason(exc: BaseException, message: str) -> str:
    """Why an exception happened, in words, when the type alone does not say it."""
    if isinstance(exc, SystemExit):
        return _say("sys_exit", code=repr(exc.code))
    if isinstance(exc, KeyboardInterrupt):
        return _say("keyboard_interrupt")
    if isinstance(exc, RecursionError):
        return _say("recursion")
    if isinstance(exc, MemoryError) or "can't allocate memory" in message:
        return _say("memory", gib=limits.MEMORY_CAP_GIB)
    if isinstance(exc, EOFError):
        return _say("stdin")
    if isinstance(exc, OSError) and exc.errno == 27:  # EFBIG: the file-size cap on the output
        return _say("printed_too_much", mib=limits.OUTPUT_CAP >> 20)
    return ""


def exception_finding(exc: BaseException, path: Path, when: str, score: float = 1.0) -> Finding:
    line, text = user_line(exc, path)
    where = "\n    " + _say("your_line", line=line, text=text) if line else ""
    if isinstance(exc, PermissionError) and exc.errno == 1 and _walled():  # EPERM: the sandbox said no
        where += "\n    " + _say("sandboxed")
    return findings.make("exception", _say("exception", error=describe(exc), when=when, where=where), line=line,
                         score=score, type=type(exc).__name__)


def _walled() -> bool:
    """This process runs under the sandbox's seccomp filter (process/landlock.py)."""
    try:
        with open("/proc/self/status") as f:
            return any(line.startswith("Seccomp:") and line.split()[1] != "0" for line in f)
    except (OSError, IndexError):
        return False
