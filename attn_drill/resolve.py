"""Which exercise and which file a command means: the one resolver behind check, hint, solution, reset,
explain, watch and next. No torch, no rich.

An ID names an exercise of the catalogue; left out, it is the exercise started last (`current`). A
command that checks a file takes PATHS too (`jobs`). Anything unclear is a usage error: one `error:`
line, a second with the command that would work, exit 2 (commands._fail).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

from attn_drill.commands import _fail, _is_file, _kind, _quote, _retry, _show

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise
    from attn_drill.state import State


def exercise(exercise_id: str) -> "Exercise":
    """The exercise of that id, or a usage error that suggests the closest."""
    from attn_drill import catalogue

    ex = catalogue.get(exercise_id)
    if ex is not None:
        return ex
    import difflib

    known = list(catalogue.exercises())
    close = difflib.get_close_matches(exercise_id, known, n=1, cutoff=0.5)
    guess = f"did you mean {close[0]}? " if close else ""
    _fail(f"no exercise called {exercise_id!r}; {guess}(the exercises: {', '.join(known)})",
          _retry(exercise_id, close[0] if close else known[0]) or "attn-drill list shows the exercises.")


def current(st: "State", command: str) -> "Exercise":
    """The exercise started last, for commands whose ID may be left out (one the catalogue no longer
    has, from an older version or a hand-edited file, counts as none)."""
    from attn_drill import catalogue

    if st.current is None or catalogue.get(st.current) is None:
        _fail("no exercise started yet.",
              f"give one (attn-drill {command} ID), or start one: attn-drill start ID (attn-drill list shows the ids).")
    return exercise(st.current)


def exercise_or_current(exercise_id: Optional[str], st: "State", command: str) -> "Exercise":
    return exercise(exercise_id) if exercise_id else current(st, command)


def _practice_file(f: Path) -> Path:
    """Where `start` would have put a file of this name."""
    from attn_drill import paths

    return Path(paths.DEFAULT_PRACTICE_DIR) / f.name


def jobs(files: List[Path], exercise_id: Optional[str], st: "State") -> list:
    """(path, exercise) pairs to check; a usage error (exit 2) for anything unclear."""
    from attn_drill import catalogue

    forced = exercise(exercise_id) if exercise_id else None
    if not files:
        ex = forced or current(st, "check")
        path = st.file(ex.id)
        if path is None:
            _fail(f"{ex.id} has no file yet.", f"run attn-drill start {ex.id}, or give the file: attn-drill check PATH")
        if not _is_file(path):
            _fail(f"the file for {ex.id}, {_show(path)}, is gone.",
                  f"attn-drill start {ex.id} writes a fresh skeleton; or give a PATH.")
        return [(path, ex)]
    out = []
    for f in files:
        kind = _kind(f)
        if kind == "other":
            _fail(f"{_show(f)} is not a regular file (a pipe or a device?); give your exercise file.")
        if kind == "dir":
            inside = [p for p in sorted(f.glob("*.py")) if catalogue.from_filename(p)]
            if not inside:
                _fail(f"{_show(f)} is a folder, with no exercise file in it.",
                      f"give the file's path; attn-drill start ID --dir {_quote(f)} writes one there.")
            _fail(f"{_show(f)} is a folder; give the exercise file inside it.",
                  _retry(f, inside[0]) or f"try: attn-drill check {_quote(inside[0])}")
        if kind == "missing":
            ex = forced or catalogue.from_filename(f)
            near = [p for p in (st.file(ex.id) if ex else None, _practice_file(f)) if _is_file(p)]
            _fail(f"no such file: {_show(f)}", (_retry(f, near[0]) or f"try: attn-drill check {_quote(near[0])}") if near else
                  "give the path of your exercise file, or no path at all to check the exercise you started last "
                  "(attn-drill start ID writes one).")
        ex = forced or catalogue.from_filename(f)
        if ex is None:
            ids = list(catalogue.exercises())
            _fail(f"cannot tell which exercise {_show(f.name)} is for: name it after one (my_{ids[0]}.py) or say which.",
                  f"try: attn-drill check {_quote(f)} --exercise {ids[0]}   (the exercises: {', '.join(ids)})")
        out.append((f.resolve(), ex))
    return out
