"""`mock --answers`: scripted answers are checked before they count, so none is ever scored by accident.

Before the clock starts the count and the range are checked against what any mock can ask: N_QUESTIONS bank
questions without a pass, up to explain.MAX_QUESTIONS after one (4 or 5), choices 1 to MAX_CHOICES. Once the
questions are known (after the coding part), the answers are held to them before the first is scored: one for
each question (a surplus is unused), a choice number within each multiple-choice question's range. A mismatch
is a usage error, with nothing scored: the mock waits at its questions, to be resumed.
"""

from __future__ import annotations

from attn_drill.i18n import t

MAX_CHOICES = 4  # every question, of the bank and of explain, has at most four choices (a test holds it)
N_QUESTIONS = 3  # a mock's follow-up without a pass: bank questions
N_FOLLOW_UP = 4  # after a pass: at least this many follow-ups, the explain round's first (it asks up to 5)


class BadAnswers(ValueError):
    """The scripted answers do not fit the questions; the message says how."""


def counts() -> tuple[int, int]:
    """The fewest and the most questions a mock asks."""
    from attn_drill.practice import explain

    return N_QUESTIONS, max(N_FOLLOW_UP, explain.MAX_QUESTIONS)


def _given(n: int) -> str:
    """"3 answers given", "1 answer given"."""
    return t("practice.explain.mock_answers." + ("given_one" if n == 1 else "given"), n=n)


def up_front(items: list[str]) -> None:
    """Before the clock starts: a count no mock asks, or a choice number no question has, is a BadAnswers."""
    low, high = counts()
    if not low <= len(items) <= high:
        raise BadAnswers(t("practice.explain.mock_answers.mock_counts", given=_given(len(items)), low=low,
                           next=low + 1, high=high))
    for i, item in enumerate(items, 1):
        if item.isdigit() and not 1 <= int(item) <= MAX_CHOICES:
            raise BadAnswers(t("practice.explain.mock_answers.out_of_range", i=i, item=item, top=MAX_CHOICES))


def forms(explained: list[dict], bank: list) -> list[str]:
    """What each question takes, in order: "a shape" or "1-4" (as data: `plan` says them in words)."""
    mine = ["a shape" if not q.get("choices") else f"1-{len(q['choices'])}" for q in explained]
    return mine + [f"1-{len(q.choices)}" for q in bank]


def plan(want: list[str]) -> str:
    """What the questions take, in words: "a shape, 1-4, 1-4"."""
    return t("practice.explain.mock_answers.plan_sep").join(
        t("practice.explain.mock_answers.a_shape") if form == "a shape" else form for form in want)


def against(explained: list[dict], bank: list, items: list[str], asker: str | None = None) -> None:
    """Once the questions are known: an answer for each (a surplus is left unused: after a pass 4 or 5 are
    asked, and a script cannot know which), each choice a number within its question's choices; a typed shape
    takes any text (a number there is a wrong shape). Else a BadAnswers saying what the questions take.
    `asker`: who asks, in words (this mock, unless given)."""
    want = forms(explained, bank)
    said = plan(want)
    if len(items) < len(want):
        raise BadAnswers(t("practice.explain.mock_answers.too_few", given=_given(len(items)), n=len(want), plan=said,
                           asker=asker or t("practice.explain.mock_answers.this_mock")))
    for i, (item, form) in enumerate(zip(items, want), 1):
        if form == "a shape":
            continue
        top = int(form.split("-")[1])
        if not (item.isdigit() and 1 <= int(item) <= top):
            raise BadAnswers(t("practice.explain.mock_answers.not_a_choice", i=i, item=item, form=form, plan=said))
