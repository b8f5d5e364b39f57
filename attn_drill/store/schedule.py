"""Spaced review: each exercise is a card of FSRS (the `fsrs` package: the scheduler Anki uses), which says
when it is due again. No torch, no rich; fsrs is imported only to rate a card, never to read the schedule.

How a card is rated, at most once per attempt for a failure and once for its pass (an attempt is a practice
file from `start`/`reset` until the next, or one mock; history.py):

- a pass within the exercise's target time: Good; over it: Hard;
- a failing check, or an attempt abandoned (`reset` of a file you worked on, a mock that ran out or was ended
  without a pass): Again. A file whose TODOs still raise is not started: not rated.

Every rating is a row of the history's `reviews` table with when the card is due after it (unix time) and the
card itself (fsrs.Card.to_dict), so `list`, `next` and `mock` read the schedule with one query. A new rating
replays the exercise's ratings through the scheduler: the ratings are the record, the stored card a copy. Scheduler settings: no
learning steps (an exercise is minutes of work, not a flash card: a failed one comes back the next day, not in
a minute) and no fuzz (the same history gives the same schedule).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from attn_drill import catalogue
from attn_drill.store import history

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise

GOOD, HARD, AGAIN = "good", "hard", "again"
CLOCK_ENV = "ATTN_DRILL_CLOCK"  # a file holding a fake "now" (seconds since the epoch), as for the mock


def now() -> float:
    fake = os.environ.get(CLOCK_ENV)
    if fake:
        try:
            return float(Path(fake).read_text().strip())
        except (OSError, ValueError):
            pass
    return time.time()


def _scheduler():
    import fsrs  # ~20 ms: only where a card is rated

    return fsrs.Scheduler(learning_steps=(), relearning_steps=(), enable_fuzzing=False)


def review(exercise_id: str, rating: str, *, attempt: str | None, source: str, at: float | None = None) -> bool:
    """Rate the exercise's card and record the card after it; False (with a warning) if it could not be recorded."""
    from datetime import datetime, timezone

    import fsrs

    at = now() if at is None else at
    scheduler, card = _scheduler(), fsrs.Card(card_id=1)
    # the card is replayed from its ratings, the one record: a stored card someone edited cannot derail it, nor
    # can a rating dated after this one (a clock gone wrong, a row someone else wrote): those are left out
    earlier = [r for r in history.reviews(exercise_id) if r["at"] <= at]
    for r in [*earlier, {"rating": rating, "at": at}]:
        when = datetime.fromtimestamp(max(r["at"], card.last_review.timestamp() if card.last_review else 0),
                                      timezone.utc)
        card, _ = scheduler.review_card(card, fsrs.Rating[r["rating"].capitalize()], review_datetime=when)
    return history.record_review(exercise_id, rating, attempt=attempt, source=source, at=at,
                                 due=card.due.timestamp(), card=card.to_dict())


def rating_for(seconds: float | None, ex: "Exercise") -> str:
    """Good within the target time (or with no time known: a pass is a pass), Hard over it."""
    return HARD if seconds is not None and seconds > ex.minutes * 60 else GOOD


def after_check(ex: "Exercise", rep, *, attempt: str | None, seconds: float | None, source: str) -> None:
    """Rate the attempt on a check's report: its first failure Again, its first pass Good or Hard."""
    if attempt is None or not rep.judged:
        return
    rated = [r["rating"] for r in history.reviews(ex.id) if r["attempt"] == attempt]
    if rep.passed and not {GOOD, HARD} & set(rated):
        review(ex.id, rating_for(seconds, ex), attempt=attempt, source=source)
    elif not rep.passed and not rated:
        review(ex.id, AGAIN, attempt=attempt, source=source)


def abandoned(ex: "Exercise", *, attempt: str | None, source: str) -> bool:
    """An attempt given up without a pass (reset, a mock out of time): Again, unless it was rated already."""
    if attempt is None or any(r["attempt"] == attempt for r in history.reviews(ex.id)):
        return False
    return review(ex.id, AGAIN, attempt=attempt, source=source)


# -- reading the schedule (no fsrs) ------------------------------------------------------------------
def latest() -> dict[str, dict]:
    """Each rated exercise's last review: {"rating", "at", "due", "card"}."""
    return {r["exercise"]: r for r in history.reviews()}


def due(at: float | None = None) -> list[str]:
    """The exercises due for review now, most overdue first (only those of the catalogue)."""
    at = now() if at is None else at
    known = catalogue.exercises()
    rows = sorted((r["due"], i) for i, r in latest().items() if i in known and r["due"] <= at)
    return [i for _, i in rows]


def next_up(at: float | None = None) -> tuple["Exercise", str] | None:
    """The most useful exercise now and why: "review" (the most overdue), "new" (the first in the catalogue's
    order never rated nor passed), "early" (nothing due or new: the one due soonest); None if there is none."""
    at = now() if at is None else at
    exercises, cards = catalogue.exercises(), latest()
    overdue = due(at)
    if overdue:
        return exercises[overdue[0]], "review"
    passed = {i for i, p in history.progress().items() if p.passed}
    for ex in exercises.values():
        if ex.id not in cards and ex.id not in passed:
            return ex, "new"
    later = sorted((r["due"], i) for i, r in cards.items() if i in exercises)
    return (exercises[later[0][1]], "early") if later else None


def when(due_at: float, at: float | None = None) -> str:
    """'now', or how far off: 'in 3 days', 'in 5 h', 'in 20 min'."""
    from attn_drill.i18n import t

    left = due_at - (now() if at is None else at)
    if left <= 0:
        return t("when.now")
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if left >= size:
            n = round(left / size)
            return t(f"when.{unit}s" if unit == "day" and n != 1 else f"when.{unit}", n=n)
    return t("when.min", n=1)
