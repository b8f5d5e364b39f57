"""The exercise catalogue: one TOML file, read once. No torch here."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from attn_drill import paths

CATALOGUE = Path(__file__).with_name("catalogue.toml")


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    file: str
    names: tuple[str, ...]
    difficulty: str
    minutes: int
    concepts: tuple[str, ...]
    mistakes: tuple[str, ...]  # the slugs a file of it can be named (the corpus proves each, mutants ask them)
    task: str
    hints: tuple[str, ...]

    @property
    def skeleton(self) -> Path:
        return paths.EXERCISES / self.file

    @property
    def reference(self) -> Path:
        return paths.REFERENCE / self.file


def exercises() -> dict[str, Exercise]:
    """Every exercise by id, its title, task and hints in the language in use (i18n/zh/exercises.toml)."""
    from attn_drill import i18n

    return _exercises(i18n.lang())


@lru_cache(maxsize=None)
def _exercises(language: str) -> dict[str, Exercise]:
    from attn_drill import i18n

    data = tomllib.loads(CATALOGUE.read_text(encoding="utf-8"))
    words = i18n.table(language, "exercises") if language != i18n.EN else {}
    out = {}
    for e in data["exercise"]:
        e = e | words.get(e["id"], {})
        out[e["id"]] = Exercise(
            id=e["id"],
            title=e["title"],
            file=e["file"],
            names=tuple(e["names"]),
            difficulty=e["difficulty"],
            minutes=int(e["minutes"]),
            concepts=tuple(e.get("concepts", ())),
            mistakes=tuple(e.get("mistakes", ())),
            task=e["task"].strip("\n"),
            hints=tuple(e["hints"]),
        )
    return out


def get(exercise_id: str) -> Exercise | None:
    return exercises().get(exercise_id)


def from_filename(path: Path) -> Exercise | None:
    """The exercise a file is for, from its name (mha.py, mha_fused.py, my_mha.py ...)."""
    stem = path.stem.lower().replace("-", "_")
    by_stem = {Path(e.file).stem: e for e in exercises().values()}
    if stem in by_stem:
        return by_stem[stem]
    # longest file stem that the name ends with or starts with, e.g. "attempt2_mha" or "mha_v2"
    for s in sorted(by_stem, key=len, reverse=True):
        if stem.endswith("_" + s) or stem.startswith(s + "_"):
            return by_stem[s]
    return None
