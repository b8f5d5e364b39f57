"""Load a user's file as a fresh module, turning every way it can fail into a finding."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path

from attn_drill import findings
from attn_drill.report import Finding


def load(path: Path, tag: str) -> tuple[object | None, Finding | None]:
    """Parse and execute the user's file; return (module, None) or (None, finding)."""
    try:
        source = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        return None, findings.make("syntax-error", f"the file is not UTF-8: byte {e.start} cannot be decoded",
                                   line=None, score=1.0)
    try:
        compile(source, str(path), "exec")
    except SyntaxError as e:
        where = f"line {e.lineno}, column {e.offset}" if e.lineno else "somewhere"
        text = (e.text or "").rstrip()
        evidence = f"{type(e).__name__}: {e.msg} at {where}" + (f"\n    {text}" if text else "")
        return None, findings.make("syntax-error", evidence, line=e.lineno, score=1.0)
    except ValueError as e:  # e.g. a NUL byte
        return None, findings.make("syntax-error", str(e), score=1.0)

    spec = importlib.util.spec_from_file_location(f"attn_drill_user_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))  # the user's own helper modules next to the file
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001 - user code may raise anything, SystemExit included
        return None, exception_finding(e, path, "while importing the file")
    finally:
        if sys.path and sys.path[0] == str(path.parent):
            sys.path.pop(0)
    return module, None


def user_line(exc: BaseException, path: Path) -> tuple[int | None, str]:
    """The last line of the user's file in the traceback, and its text."""
    target = str(path.resolve())
    line, text = None, ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if str(Path(frame.filename).resolve()) == target:
            line, text = frame.lineno, (frame.line or "").strip()
    return line, text


def describe(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    first = msg[0] if msg else ""
    if len(first) > 300:
        first = first[:300] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def exception_finding(exc: BaseException, path: Path, when: str, score: float = 1.0) -> Finding:
    line, text = user_line(exc, path)
    where = f"\n    your line {line}: {text}" if line else ""
    return findings.make("exception", f"{describe(exc)} {when}{where}", line=line,
                         score=score, type=type(exc).__name__)
