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


# The contract's diagnoses for each exercise (the shared EXERCISES.md table), plus this project's own.
GENERIC = {"forbidden-builtin", "wrong-output-shape", "nan-output", "exception", "syntax-error", "missing-name",
           "wrong-signature", "wrong-return-type", "timeout", "crash", "backward-fails", "dtype-not-preserved",
           "device-mismatch", "torch-modified", "input-modified"}
ATTENTION = {"missing-scale", "wrong-scale", "softmax-wrong-dim", "mask-inverted", "mask-ignored",
             "mask-after-softmax", "mask-fill-overflow", "nan-on-empty-row"}
REQUIRED = {
    "sdpa": GENERIC | ATTENTION,
    "mha": GENERIC | ATTENTION | {"mask-head-broadcast", "wrong-head-split", "wrong-head-merge",
                                  "missing-output-projection"},
}


def test_corpus_covers_every_pair():
    """Two wrong files or more for every (exercise, slug) the contract lists, four correct files per exercise."""
    count: dict[tuple[str, str], int] = {}
    for p in FILES:
        key = (p.parent.name, p.stem.split("__")[0])
        count[key] = count.get(key, 0) + 1
    for exercise, slugs in REQUIRED.items():
        assert count.get((exercise, "ok"), 0) >= 4, f"{exercise}: correct files"
        for slug in slugs:
            assert count.get((exercise, slug), 0) >= 2, f"{exercise}/{slug}: {count.get((exercise, slug), 0)} files"
