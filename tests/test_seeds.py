"""A file gets the same verdict under every seed: the corpus's expected first finding under other seeds than the
corpus test's. By default a sample (every SAMPLE-th file of each exercise) under one more seed than the
corpus test's; `python -m pytest -m slow tests/test_seeds.py` runs every corpus file under five."""

from __future__ import annotations

import pytest

from attn_drill import findings
from attn_drill.process import Job, run_checks
from test_corpus import FILES, expected_slug

SAMPLE = 50
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
    out: dict = {}
    for seed in seeds:
        for p in sorted({p.parent.name for p in files}):
            mine = [f for f in files if f.parent.name == p]
            for f, r in zip(mine, run_checks([Job(f, p) for f in mine], seed=seed, timeout=8.0)):
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


def _seeds_of(exercise: str) -> type:
    """One exercise's share of the sample as a class of its own: pytest-xdist (--dist loadscope) spreads the
    classes over its workers."""

    def test_sampled_files_keep_their_verdict_under_other_seeds(self):
        check([p for p in sample() if p.parent.name == exercise], SEEDS)

    test = test_sampled_files_keep_their_verdict_under_other_seeds
    return type(f"TestSeeds_{exercise.replace('-', '_')}", (), {test.__name__: test})


for _exercise in sorted({p.parent.name for p in sample()}):
    globals()[f"TestSeeds_{_exercise.replace('-', '_')}"] = _seeds_of(_exercise)


@pytest.mark.slow
def test_every_file_keeps_its_verdict_under_five_seeds():
    check([p for p in FILES if expected_slug(p) not in ("timeout", "crash")], ALL_SEEDS)
