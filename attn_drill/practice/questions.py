"""The follow-up question bank (practice/questions.toml): load it, check it, pick questions for an exercise."""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BANK = Path(__file__).with_name("questions.toml")
CONCEPTS = ("scaling", "softmax", "complexity", "heads", "masks", "cross-attention", "gqa", "kv-cache",
            "rope", "flash", "relative-position", "residuals", "layer-norm", "sliding-window", "mla", "alibi", "linear-attention", "backward", "paged")


@dataclass(frozen=True)
class Question:
    id: str
    concepts: tuple[str, ...]
    question: str
    choices: tuple[str, ...]
    answer: int  # 1-based
    explanation: str

    def is_right(self, choice: int | None) -> bool:
        return choice == self.answer


def bank() -> dict[str, Question]:
    """Every question by id, worded in the language in use (i18n/zh/questions.toml; the answer is the bank's)."""
    from attn_drill import i18n

    return _bank(i18n.lang())


@lru_cache(maxsize=None)
def _bank(language: str) -> dict[str, Question]:
    from attn_drill import i18n

    data = tomllib.loads(BANK.read_text(encoding="utf-8"))
    words = i18n.table(language, "questions") if language != i18n.EN else {}
    out = {}
    for q in data["question"]:
        q = q | words.get(q["id"], {})
        out[q["id"]] = Question(q["id"], tuple(q["concepts"]), q["question"].strip(),
                                tuple(c.strip() for c in q["choices"]), int(q["answer"]), q["explanation"].strip())
    return out


def problems(questions: dict[str, Question] | None = None) -> list[str]:
    """What is wrong with the bank, one line each (empty when it is fine); the tests hold it empty."""
    questions = bank() if questions is None else questions
    out = []
    for q in questions.values():
        unknown = set(q.concepts) - set(CONCEPTS)
        if not q.concepts or unknown:
            out.append(f"{q.id}: concepts {sorted(unknown) or 'missing'} not in {CONCEPTS}")
        if not 3 <= len(q.choices) <= 4 or len(set(q.choices)) != len(q.choices):
            out.append(f"{q.id}: needs 3 or 4 distinct choices")
        if not 1 <= q.answer <= len(q.choices):
            out.append(f"{q.id}: answer {q.answer} is not one of the choices")
        if not q.question or not q.explanation:
            out.append(f"{q.id}: question or explanation empty")
    return out


def pick(concepts: tuple[str, ...] | list[str], n: int = 3, *, rng: random.Random | None = None,
         avoid: set[str] = frozenset()) -> list[Question]:
    """n questions sharing a concept with `concepts`; fresh ones (not in `avoid`) first, random among
    equals. Too few on topic: the rest come from anywhere in the bank."""
    rng = rng or random.Random()
    wanted = set(concepts)
    pool = sorted(bank().values(), key=lambda q: q.id)  # a fixed order, so a seed replays the same pick
    rng.shuffle(pool)
    pool.sort(key=lambda q: (not (wanted & set(q.concepts)), q.id in avoid))  # stable: keeps the shuffle
    return pool[:n]


def parse_answers(text: str | None) -> list[int] | None:
    """'1,3,2' -> [1, 3, 2]; None for None. A ValueError names the bad item."""
    if text is None:
        return None
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit() or int(item) < 1:
            raise ValueError(f"{item!r} is not a choice number (1, 2, 3...)")
        out.append(int(item))
    return out
