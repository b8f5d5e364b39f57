"""A file gets the same verdict under every seed: the corpus's expected first finding under other seeds than the
corpus test's. By default a sample (every SAMPLE-th file of each exercise) under one more seed than the
corpus test's; `python -m pytest -m slow tests/test_seeds.py` runs every corpus file under five."""

from __future__ import annotations

import pytest

from attn_drill import findings
from attn_drill.process import Job, run_checks
from test_corpus import FILES, expected_slug

SAMPLE = 40
SEEDS = (2,)  # the corpus test runs seed 1234: together, two seeds a file
ALL_SEEDS = (1, 2, 3, 4, 5)


def sample() -> list:
    by_exercise: dict[str, list] = {}
    for p in FILES:
        if expected_slug(p) not in ("timeout", "crash"):  # their verdict does not hang on the inputs; slow to run
            by_exercise.setdefault(p.parent.name, []).append(p)
    return [p for files in by_exercise.values() for i, p in enumerate(files) if i % SAMPLE == 0]


def first(report) -> str:
    errors = [f.slug for f in report.findings if f.level == "error"]
    if errors:
        return errors[0]
    return "ok" if report.passed else "failed with no error"


def verdicts(files: list, seeds: tuple) -> dict:
    """{file: {seed: first error}}; each seed's files in one batch, whatever their exercises (one warm pool: the
    batch's start-up, torch imported in each lane, is paid once a seed, not once an exercise)."""
    out: dict = {}
    for seed in seeds:
        for f, r in zip(files, run_checks([Job(f, f.parent.name) for f in files], seed=seed, timeout=8.0)):
            out.setdefault(f, {})[seed] = first(r)
    return out


def check(files: list, seeds: tuple) -> None:
    differ = []
    for f, by_seed in verdicts(files, seeds).items():
        want = expected_slug(f) or "ok"
        if want.startswith("ok-"):
            want = "ok"
        wants = set(want.split("+"))
        warning = want in findings.WORDING and findings.WORDING[want][0] == findings.WARNING
        warnings_only = warning and all(v == "ok" for v in by_seed.values())  # a warning's file passes
        if not warnings_only and any(v not in wants for v in by_seed.values()):
            differ.append(f"{f.parent.name}/{f.name}: {by_seed}")
    assert not differ, "verdicts that change with the seed or miss:\n" + "\n".join(differ)


def test_sampled_files_keep_their_verdict_under_another_seed():
    check(sample(), SEEDS)


@pytest.mark.slow
def test_every_file_keeps_its_verdict_under_five_seeds():
    check([p for p in FILES if expected_slug(p) not in ("timeout", "crash")], ALL_SEEDS)
