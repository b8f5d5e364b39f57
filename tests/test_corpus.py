"""The diagnosis corpus: every known-wrong file is named first, every correct file passes.

tests/corpus/<exercise>/<slug>__<tag>.py holds exactly one mistake, the slug that must come first;
tests/corpus/<exercise>/ok__<style>.py is correct and must pass with no error finding.
Adding a case is adding a file. All files are checked in one worker process (one torch import).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attn_drill.check import Job, run_checks

CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(CORPUS.glob("*/*.py"))
SEED = 1234


@pytest.fixture(scope="module")
def reports():
    jobs = [Job(p, p.parent.name) for p in FILES]
    return {Path(r.file).resolve(): r for r in run_checks(jobs, seed=SEED)}


def expected_slug(path: Path) -> str | None:
    head = path.stem.split("__")[0]
    return None if head == "ok" else head


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_corpus_file(path, reports):
    report = reports[path.resolve()]
    slug = expected_slug(path)
    names = [f.slug for f in report.findings]
    if slug is None:
        assert report.passed, f"a correct file failed: {names} {[s.detail for s in report.stages]}"
        assert not report.errors
        return
    assert names, f"no finding at all; stages: {[(s.name, s.status, s.detail) for s in report.stages]}"
    assert names[0] == slug, f"expected {slug} first, got {names}: {report.findings[0].evidence}"
    first = report.findings[0]
    assert first.evidence and first.fix and first.title
    if first.level == "warning":
        assert report.passed, "a warning alone must not fail the check"
    else:
        assert not report.passed


def test_corpus_covers_every_pair():
    """At least two wrong files per (slug, exercise) the corpus has, and four correct files per exercise."""
    by_pair: dict[tuple[str, str], int] = {}
    for p in FILES:
        by_pair[(p.parent.name, p.stem.split("__")[0])] = by_pair.get((p.parent.name, p.stem.split("__")[0]), 0) + 1
    for (exercise, slug), n in by_pair.items():
        assert n >= (4 if slug == "ok" else 2), f"{exercise}/{slug}: {n} files"
