"""`attn-drill stats`: progress by exercise and by mistake, from the practice history. Plain data; the
CLI prints it as JSON or hands it to render_mock.stats.

An attempt is one go at an exercise: a practice file from `start` (or `reset`) until the next one, or one
mock. Its solve time is the time from its start to its first pass. Checks of other files count as checks
(and their mistakes as mistakes) but belong to no attempt.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from datetime import datetime, timezone

from attn_drill import catalogue
from attn_drill.store import history

SPARKS = "▁▂▃▄▅▆▇█"
RECENT_MOCKS = 10
TOP_MISTAKES = 3
TREND_STEP = 5  # points between the halves' averages that count as a move up or down


def compute(recent: int = RECENT_MOCKS) -> dict:
    rows, cards, progress = history.checks(), history.mocks(), history.progress()
    by_exercise = defaultdict(list)
    for r in rows:
        by_exercise[r["exercise"]].append(r)
    known = catalogue.exercises()
    order = [i for i in known if i in by_exercise] + sorted(i for i in by_exercise if i not in known)
    return {
        "exercises": [_exercise(i, by_exercise[i], progress.get(i, history.Progress()), known.get(i))
                      for i in order],
        "mocks": _mocks(cards, recent),
        "explain": explained(history.explains()),
    }


def _exercise(exercise_id: str, rows: list[dict], done: history.Progress, ex) -> dict:
    times = done.solve_seconds
    mistakes = Counter(slug for r in rows if not r["passed"] for slug in dict.fromkeys(r["slugs"]))
    return {
        "id": exercise_id,
        "title": ex.title if ex else None,
        "target_seconds": ex.minutes * 60 if ex else None,
        "checks": len(rows),
        "passing_checks": sum(r["passed"] for r in rows),
        "attempts": done.attempts,
        "passes": done.passes,
        "passed": done.passed,  # a pass of any file, as `list` shows it
        "best_seconds": done.best,
        "median_seconds": round(statistics.median(times), 1) if times else None,
        "mistakes": [{"slug": s, "count": n} for s, n in mistakes.most_common(TOP_MISTAKES)],
        "last_at": _iso(max(r["at"] for r in rows)),
    }


def _mocks(cards: list[dict], recent: int) -> dict:
    last = cards[-recent:]
    scores = [c["score"] for c in last]
    return {
        "count": len(cards),
        "recent": [{
            "id": c["id"], "exercise": c["exercise"], "ended_at": _iso(c["ended_at"]), "score": c["score"],
            "passed": c.get("passed") is True, "strict": c.get("strict") is True, "seconds_used": c["seconds_used"],
            "target_seconds": c["target_seconds"], "questions_right": _questions(c).get("right", 0),
            "questions_total": _questions(c).get("total", 0), "hints": c.get("hints", 0),
            "explained_right": _explained(c).get("right", 0), "explained_total": _explained(c).get("total", 0),
        } for c in last],
        "trend": trend(scores),
    }


def explained(rounds: list[dict]) -> dict:
    """The explain rounds (`explain` and a mock's follow-up after a pass): how many, and per kind of question
    (shape, breaks, cost, concept) how many were asked and missed, the most missed first."""
    asked, missed = Counter(), Counter()
    for r in rounds:
        for q in r["questions"]:
            asked[q["kind"]] += 1
            missed[q["kind"]] += not q.get("right")
    kinds = [{"kind": k, "asked": n, "missed": missed[k]} for k, n in asked.items()]
    kinds.sort(key=lambda k: (-k["missed"] / k["asked"], -k["asked"], k["kind"]))
    return {"rounds": len(rounds), "right": sum(r["right"] for r in rounds if _count(r["right"])),
            "total": sum(r["total"] for r in rounds if _count(r["total"])), "kinds": kinds}


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _explained(card: dict) -> dict:
    """A mock's questions on the user's own file (after a pass); {} for older cards and anything malformed."""
    e = card.get("explained")
    return e if isinstance(e, dict) and _count(e.get("right")) and _count(e.get("total")) else {}


def _questions(card: dict) -> dict:
    q = card.get("questions")
    return q if isinstance(q, dict) else {}  # history.mocks() checked the numbers, not this part


def trend(scores: list[float]) -> dict:
    """A sparkline of the scores (0-100, oldest first) and which way they go: the average of the later
    half against the earlier half."""
    spark = "".join(SPARKS[min(len(SPARKS) - 1, int(s / 100 * len(SPARKS)))] for s in scores)
    if len(scores) < 2:
        return {"scores": scores, "sparkline": spark, "direction": None, "change": None}
    half = len(scores) // 2
    change = statistics.mean(scores[-half:]) - statistics.mean(scores[:half])
    direction = "up" if change >= TREND_STEP else "down" if change <= -TREND_STEP else "flat"
    return {"scores": scores, "sparkline": spark, "direction": direction, "change": round(change, 1)}


def _iso(t: float) -> str:
    try:
        return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):  # a time no clock can show (a row written by hand)
        return "?"
