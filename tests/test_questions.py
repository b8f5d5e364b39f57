"""The follow-up question bank: well formed, big enough, on topic for every exercise."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from attn_drill import catalogue
from attn_drill.practice import questions
from attn_drill.practice.questions import Question


def test_the_bank_is_well_formed_and_big_enough():
    assert questions.problems() == []
    bank = questions.bank()
    assert len(bank) >= 30
    per_concept = Counter(c for q in bank.values() for c in q.concepts)
    assert set(per_concept) == set(questions.CONCEPTS)
    assert min(per_concept.values()) >= 3, per_concept


def test_the_right_answer_is_not_always_in_the_same_place():
    places = Counter(q.answer for q in questions.bank().values())
    assert len(places) >= 3 and max(places.values()) <= len(questions.bank()) // 2, places


def test_problems_finds_a_bad_question():
    bad = {"x": Question("x", ("scaling", "bogus"), "Q?", ("a", "a"), 3, "")}
    found = "\n".join(questions.problems(bad))
    assert "bogus" in found and "distinct" in found and "answer 3" in found and "empty" in found


@pytest.mark.parametrize("exercise", list(catalogue.exercises()))
def test_every_exercise_gets_three_distinct_questions(exercise):
    ex = catalogue.get(exercise)
    picked = questions.pick(ex.concepts, 3, rng=random.Random(0))
    assert len(picked) == 3 and len({q.id for q in picked}) == 3
    on_topic = [q for q in questions.bank().values() if set(q.concepts) & set(ex.concepts)]
    assert len(on_topic) >= 3  # the bank has enough on every exercise's concepts...
    assert all(set(q.concepts) & set(ex.concepts) for q in picked)  # ...and they are the ones drawn


def test_pick_stays_on_topic_prefers_fresh_questions_and_replays_with_a_seed():
    rope = [q.id for q in questions.bank().values() if "rope" in q.concepts]
    first = questions.pick(["rope"], 3, rng=random.Random(7))
    assert all("rope" in q.concepts for q in first)
    assert [q.id for q in questions.pick(["rope"], 3, rng=random.Random(7))] == [q.id for q in first]
    fresh = questions.pick(["rope"], 3, rng=random.Random(7), avoid={q.id for q in first})
    assert not {q.id for q in fresh} & {q.id for q in first} and len(rope) >= 6
    seen = {q.id for seed in range(30) for q in questions.pick(["rope"], 3, rng=random.Random(seed))}
    assert seen == set(rope)  # random among equals: every rope question comes up


def test_pick_falls_back_to_other_concepts():
    scaling = {q.id for q in questions.bank().values() if "scaling" in q.concepts}
    picked = questions.pick(["scaling"], len(scaling) + 2, rng=random.Random(1))  # more than there are
    assert len({q.id for q in picked}) == len(scaling) + 2
    assert {q.id for q in picked[:len(scaling)]} == scaling  # every one on topic, first
    assert not any("scaling" in q.concepts for q in picked[len(scaling):])  # the rest from other concepts
    assert len({q.id for q in questions.pick(["no-such-concept"], 3, rng=random.Random(1))}) == 3


def test_parse_answers():
    assert questions.parse_answers("1, 3,2") == [1, 3, 2]
    assert questions.parse_answers(None) is None
    for bad in ("1,x", "0", "1,,2"):
        with pytest.raises(ValueError):
            questions.parse_answers(bad)
