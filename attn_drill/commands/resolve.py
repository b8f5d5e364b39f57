"""Which exercise and which file a command means: the one resolver behind check, hint, solution, reset,
explain, watch and next. No torch, no rich.

An ID names an exercise of the catalogue; left out, it is the exercise started last (`current`). A
command that checks a file takes PATHS too (`jobs`). Anything unclear is a usage error: one `error:`
line, a second with the command that would work, exit 2 (usage.fail).
"""

from __future__ import annotations

from attn_drill.i18n import t

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

from attn_drill.commands.usage import (fail as _fail, is_file as _is_file, kind as _kind, quote as _quote,
    retry as _retry, show as _show)

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise
    from attn_drill.store.state import State


class Unusable(Exception):
    """A file of a batch that cannot be checked: its `error:` line and the command that would work. In a batch
    it is that file's line and the others go on; alone it is a usage error."""

    def __init__(self, path: Path, message: str, more: str = ""):
        super().__init__(message)
        self.path, self.message, self.more = path, message, more


def find(exercise_id: str) -> "Exercise | None":
    """The exercise of that id, any case, `_` for `-` (MHA, mha_fused); None if there is none."""
    from attn_drill import catalogue

    return catalogue.get(exercise_id) or catalogue.get(exercise_id.strip().lower().replace("_", "-"))


def exercise(exercise_id: str) -> "Exercise":
    """The exercise of that id, or a usage error that suggests the closest."""
    from attn_drill import catalogue

    ex = find(exercise_id)
    if ex is not None:
        return ex
    known = list(catalogue.exercises())
    close = suggest(exercise_id)
    if close:
        _fail(t("usage.no_exercise_mean", id=exercise_id, close=close.id), _retry(exercise_id, close.id) or _listed(known))
    _fail(t("usage.no_exercise", id=exercise_id), _listed(known))  # two lines: 80 columns


def suggest(word: str) -> "Exercise | None":
    """The exercise a mistyped word most likely means, ranked by its id and by its title's words
    (`flash-attention` is flash, `mah` is mha, `gqaa` is gqa); None when nothing is close."""
    import difflib
    import re

    from attn_drill import catalogue

    typed = re.sub(r"[\s_]+", "-", word.strip().lower())

    def names(ex) -> list[str]:
        words = re.findall(r"[a-z0-9]+", ex.title.lower())
        return [ex.id] + ["-".join(words[:n]) for n in range(1, len(words) + 1)]

    scored = [(max(difflib.SequenceMatcher(None, typed, n).ratio() for n in names(ex)), ex.id == typed, ex)
              for ex in catalogue.exercises().values()]
    best = max(scored, key=lambda s: s[:2])
    return best[2] if best[0] >= 0.6 else None


def _listed(known: list) -> str:
    """The exercises in one line of 80 columns: as many ids as fit, then where to see them all."""
    from attn_drill.say import cells

    line = t("usage.exercises", ids=", ".join(known))
    if cells(line) <= 80:
        return line
    shown = known[:]
    while shown and cells(t("usage.exercises_more", ids=", ".join(shown))) > 80:
        shown.pop()
    return t("usage.exercises_more", ids=", ".join(shown))


def current(st: "State", command: str) -> "Exercise":
    """The exercise started last, for commands whose ID may be left out (one the catalogue no longer
    has, from an older version or a hand-edited file, counts as none)."""
    from attn_drill import catalogue

    if st.current is None or catalogue.get(st.current) is None:
        _fail(t("usage.none_started"), t("usage.none_started_more", command=command))
    return exercise(st.current)


def exercise_or_current(exercise_id: Optional[str], st: "State", command: str) -> "Exercise":
    return exercise(exercise_id) if exercise_id else current(st, command)


def _practice_file(f: Path) -> Path:
    """Where `start` would have put a file of this name."""
    from attn_drill import paths

    return Path(paths.DEFAULT_PRACTICE_DIR) / f.name


def jobs(files: List[Path], exercise_id: Optional[str], st: "State") -> list:
    """(path, exercise) pairs to check, in order; a usage error (exit 2) for anything unclear. With several
    files, one that cannot be checked is an `Unusable` in its place instead, and the others go on."""
    forced = exercise(exercise_id) if exercise_id else None
    if not files:
        return [started_file(forced or current(st, "check"), st)]
    out = []
    for f in files:
        try:
            out.append(_job(f, forced, st))
        except Unusable as e:
            if len(files) == 1:
                _fail(e.message, e.more)
            out.append(e)
    return out


def started_file(ex: "Exercise", st: "State", path: Optional[Path] = None) -> tuple:
    """(the exercise's practice file, ex), or a usage error when it has none (an Unusable for a batch's `path`)."""
    file = st.file(ex.id)
    if file is None:
        problem = (t("usage.no_file_yet", id=ex.id), t("usage.no_file_yet_check", id=ex.id))
    elif not _is_file(file):
        problem = (t("usage.file_gone", id=ex.id, path=_show(file)), t("usage.file_gone_check", id=ex.id))
    else:
        return file, ex
    if path is not None:
        raise Unusable(path, *problem)
    _fail(*problem)


def _job(f: Path, forced: "Exercise | None", st: "State") -> tuple:
    """One PATH of `check`: (its absolute path, its exercise), or Unusable. A word that is no file but an
    exercise's id means that exercise's practice file (`attn-drill check sdpa`)."""
    from attn_drill import catalogue

    kind = _kind(f)
    if kind == "missing" and len(f.parts) == 1 and find(str(f)):
        return started_file(find(str(f)), st, f)
    if kind == "missing" and len(f.parts) == 1 and not f.suffix and suggest(str(f)):  # `check gqaa`: an id, mistyped
        close = suggest(str(f)).id
        raise Unusable(f, t("usage.no_file_or_exercise", path=_show(f), close=close),
                       _retry(f, close) or t("usage.try", command=f"attn-drill check {close}"))
    if kind == "other":
        raise Unusable(f, t("usage.not_regular", path=_show(f)))
    if kind == "dir":
        inside = [p for p in sorted(f.glob("*.py")) if catalogue.from_filename(p)]
        if not inside:
            raise Unusable(f, t("usage.empty_folder", path=_show(f)), t("usage.empty_folder_more", folder=_quote(f)))
        raise Unusable(f, t("usage.folder", path=_show(f)),
                       _retry(f, inside[0]) or t("usage.try", command=f"attn-drill check {_quote(inside[0])}"))
    if kind == "missing":
        ex = forced or catalogue.from_filename(f)
        near = [p for p in (st.file(ex.id) if ex else None, _practice_file(f)) if _is_file(p)]
        raise Unusable(f, t("usage.no_file", path=_show(f)),
                       (_retry(f, near[0]) or t("usage.try", command=f"attn-drill check {_quote(near[0])}")) if near else
                       t("usage.no_file_more"))
    ex = forced or catalogue.from_filename(f)
    if ex is None:
        raise Unusable(f, *_unnamed(f))
    return f.resolve(), ex


def _unnamed(f: Path) -> tuple[str, str]:
    """The error for a file whose name names no exercise, suggesting the one whose names it defines."""
    from attn_drill import catalogue

    ids = ", ".join(catalogue.exercises())
    guess = defines(f)
    if guess is None:
        return (t("usage.unnamed", name=_show(f.name), ids=ids),
                t("usage.try", command=f"attn-drill check {_quote(f)} --exercise ID"))
    names = [n for n in guess.names if n in _defined(f)]
    return (t("usage.unnamed_defines", name=_show(f.name), names=", ".join(names), id=guess.id),
            t("usage.try", command=f"attn-drill check {_quote(f)} --exercise {guess.id}"))


def defines(f: Path) -> "Exercise | None":
    """The exercise whose names (the catalogue's `names`) the file defines at its top level: the largest share of
    them, and among equals the one latest in the catalogue (later exercises build on earlier ones: a kv-cache file
    may define apply_rope, an mha file a softmax). None when it defines none, or cannot be read or parsed."""
    from attn_drill import catalogue

    top = _defined(f)
    scored = [(len(top & set(e.names)) / len(e.names), i, e) for i, e in enumerate(catalogue.exercises().values())]
    share, _, best = max(scored, key=lambda s: s[:2])
    return best if share > 0 else None


def _defined(f: Path) -> set[str]:
    """The functions and classes defined at the top level of the file; none if it cannot be read or parsed."""
    import ast

    try:
        if f.stat().st_size > 1 << 20:  # no exercise file is that long
            return set()
        tree = ast.parse(f.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
