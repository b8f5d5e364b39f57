"""The diagnosis corpus: every known-wrong file is named first, every correct file passes.

Check only some exercises with CORPUS=mha,gqa python -m pytest tests/test_corpus.py. By default one file of
each (exercise, slug), a blind one where there is one, two correct ones per exercise, and every two-mistake
and warning-only file are checked (SAMPLED); `-m slow` checks the rest, and CORPUS=all (or naming exercises)
checks every file of those exercises by default. An exercise's files are the tests of one class, which
pytest-xdist keeps on one worker (they are checked in one batch).

tests/corpus/<exercise>/<slug>__<tag>.py holds exactly one mistake, the slug that must come first;
tests/corpus/<exercise>/ok__<style>.py is correct and must pass with no error finding;
ok-<warning>__<style>.py passes with that warning; <slug>+<slug>__<tag>.py holds two mistakes, both named.
Files named blind_* were written without reading the checker (issue 10's blind corpus).
Adding a case is adding a file. All files are checked in one worker process (one torch import).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from attn_drill import catalogue
from attn_drill.process import Job, run_checks

CORPUS = Path(__file__).parent / "corpus"
ONLY = [e for e in os.environ.get("CORPUS", "").split(",") if e]  # CORPUS=mha,gqa: those exercises only
FILES = sorted(p for p in CORPUS.glob("*/*.py") if not ONLY or "all" in ONLY or p.parent.name in ONLY)
SEED = 1234


# a timeout file waits out the whole TIMEOUT; the mechanism is the same for every exercise, so by default only
# these exercises' are run (-m slow runs all): sdpa's first is a loop at import, flash's a loop in the call
TIMED = {"sdpa", "flash"}


def _sampled(files: list) -> list:
    """The default run's share (`-m slow` checks the rest): a file of each (exercise, first finding), the first
    blind one (written without reading the checker: a form nobody foresaw) where there is one, two correct
    ones, every two-mistake and warning-only file."""
    by_key: dict = {}
    for p in files:
        by_key.setdefault((p.parent.name, p.stem.split("__")[0]), []).append(p)
    out = []
    for (exercise, head), group in by_key.items():
        if head == "ok":
            out += group[:2]
        elif "+" in head or head.startswith("ok-"):
            out += group
        elif head != "timeout" or exercise in TIMED:
            blind = [p for p in group if "__blind_" in p.name]
            out.append((blind or group)[0])
    return sorted(out)


SAMPLED = FILES if ONLY else _sampled(FILES)
_IN_SAMPLE = set(SAMPLED)
REST = [p for p in FILES if p not in _IN_SAMPLE]


# seconds per file. The timeout files wait out TIMEOUT in a batch of their own; every other file gets LIMIT, far
# more than a check needs even on a loaded machine, so that load never turns a verdict into a timeout
TIMEOUT = 2.0
LIMIT = 120.0
_reports: dict[tuple, dict] = {}


def reports_for(path: Path) -> dict:
    """Every file of the path's exercise in the path's group (the sample, or the rest), checked in one batch: so
    `-k mha` checks only mha's, and the default run only the sample."""
    group = "sampled" if path in _IN_SAMPLE else "rest"
    key = (path.parent.name, group)
    if key not in _reports:
        files = [p for p in (SAMPLED if group == "sampled" else REST) if p.parent.name == path.parent.name]
        waits = [p for p in files if p.name.startswith("timeout__")]
        rest = [p for p in files if p not in waits]
        reports = [r for batch, limit in ((waits, TIMEOUT), (rest, LIMIT)) if batch
                   for r in run_checks([Job(p, path.parent.name) for p in batch], seed=SEED, timeout=limit)]
        _reports[key] = {Path(r.file).resolve(): r for r in reports}
    return _reports[key]


def expected_slug(path: Path) -> str | None:
    head = path.stem.split("__")[0]
    return None if head == "ok" else head


def _files(files: list, exercise: str) -> list:
    return [pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in files if p.parent.name == exercise]


def marked_line(path: Path) -> int | None:
    """The line of a one-mistake file's `# MISTAKE` comment, when it has exactly one."""
    lines = [n for n, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if "# MISTAKE" in text]
    return lines[0] if len(lines) == 1 and "+" not in path.stem.split("__")[0] else None


# the marked files whose line the report does not give yet (issue 18), as strict expected failures
NOT_YET = dict(line.split("\t") for line in (Path(__file__).parent / "lines_not_yet.tsv").read_text(
    encoding="utf-8").splitlines() if line and not line.startswith("#"))


def _marked(files: list, exercise: str) -> list:
    return [pytest.param(p, id=f"{p.parent.name}/{p.stem}", marks=[pytest.mark.xfail(
                strict=True, reason=f"issue 18: reported at {NOT_YET[key]}")] if key in NOT_YET else [])
            for p in files if p.parent.name == exercise and marked_line(p) is not None
            for key in [f"{p.parent.name}/{p.name}"]]


def _tests_of(exercise: str) -> type:
    """One exercise's files as the tests of one class: pytest-xdist (--dist loadscope) keeps a class on one
    worker, so the exercise's batch is checked once."""

    @pytest.mark.parametrize("path", _files(SAMPLED, exercise))
    def test_corpus_file(self, path):
        expect_named_first(path)

    @pytest.mark.slow
    @pytest.mark.parametrize("path", _files(REST, exercise))
    def test_corpus_file_beyond_the_sample(self, path):
        expect_named_first(path)

    @pytest.mark.parametrize("path", _marked(SAMPLED, exercise))
    def test_the_line_is_the_one_marked(self, path):
        expect_the_marked_line(path)

    @pytest.mark.slow
    @pytest.mark.parametrize("path", _marked(REST, exercise))
    def test_the_line_is_the_one_marked_beyond_the_sample(self, path):
        expect_the_marked_line(path)

    tests = {}  # a class without files of a kind (CORPUS=... runs only some) has no test of that kind
    if _files(SAMPLED, exercise):
        tests["test_corpus_file"] = test_corpus_file
    if _files(REST, exercise):
        tests["test_corpus_file_beyond_the_sample"] = test_corpus_file_beyond_the_sample
    if _marked(SAMPLED, exercise):
        tests["test_the_line_is_the_one_marked"] = test_the_line_is_the_one_marked
    if _marked(REST, exercise):
        tests["test_the_line_is_the_one_marked_beyond_the_sample"] = test_the_line_is_the_one_marked_beyond_the_sample
    return type(f"TestCorpus_{exercise.replace('-', '_')}", (), tests)


for _exercise in sorted({p.parent.name for p in FILES}):
    globals()[f"TestCorpus_{_exercise.replace('-', '_')}"] = _tests_of(_exercise)


def expect_named_first(path: Path) -> None:
    report = reports_for(path)[path.resolve()]
    slug = expected_slug(path)
    names = [f.slug for f in report.findings]
    if slug is None:
        assert report.passed, f"a correct file failed: {names} {[s.detail for s in report.stages]}"
        assert not report.errors
        # the one warning a correct file may earn: it masks with -inf, so a fully masked row would be NaN
        assert set(names) <= {"nan-on-empty-row"}, f"a correct file was warned: {names}"
        return
    if slug.startswith("ok-"):  # ok-precision-loss__x.py: correct, with that warning
        assert report.passed and not report.errors, f"a correct file failed: {names}"
        assert slug[3:] in names, f"expected the warning {slug[3:]}, got {names}"
        return
    assert names, f"no finding at all; stages: {[(s.name, s.status, s.detail) for s in report.stages]}"
    if "+" in slug:  # a+b__x.py: two mistakes at once, both named, one of them first
        both = slug.split("+")
        assert names[0] in both and all(b in names for b in both), f"expected {both} first, got {names}"
        return
    assert names[0] == slug, f"expected {slug} first, got {names}: {report.findings[0].evidence}"
    first = report.findings[0]
    assert first.evidence and first.fix and first.title
    unfilled = [text for text in (first.title, first.message, first.fix) if re.search(r"\{[a-z_]+\}", text)]
    assert not unfilled, f"a placeholder left unfilled: {unfilled}"
    if first.level == "warning":
        assert report.passed, "a warning alone must not fail the check"
    else:
        assert not report.passed


# What each exercise can get wrong, declared once in the catalogue (`mistakes`): the corpus must prove each one.
REQUIRED = {ex.id: set(ex.mistakes) for ex in catalogue.exercises().values()}


def test_corpus_covers_every_pair():
    """Two wrong files or more for every (exercise, slug) the contract lists, four correct files per exercise."""
    count: dict[tuple[str, str], int] = {}
    for p in FILES:
        key = (p.parent.name, p.stem.split("__")[0])
        count[key] = count.get(key, 0) + 1
    for exercise, slugs in REQUIRED.items():
        if ONLY and exercise not in ONLY:
            continue
        assert count.get((exercise, "ok"), 0) >= 4, f"{exercise}: correct files"
        for slug in slugs:
            assert count.get((exercise, slug), 0) >= 2, f"{exercise}/{slug}: {count.get((exercise, slug), 0)} files"


# the device stage's mechanisms, each shown by a blind file whatever the sample holds: a tensor made from two
# CPU factories and moved (kv-cache), a plain tensor attribute that module.to() never moves (gqa), a default
# made only when an optional input is missing (sdpa, mask=None), an output moved to the CPU ahead of the
# NaN-on-empty-row warning (mha), a CPU index where the meta device cannot run at all (paged-attention: traced)
DEVICE_MECHANISMS = ["kv-cache/ok__blind_b42_positions_cpu_to.py",
                     "gqa/device-mismatch__blind_b42_plain_attr_expand.py",
                     "sdpa/device-mismatch__blind_b42_default_mask_cpu.py",
                     "mha/device-mismatch__blind_b42_weights_cpu.py",
                     "paged-attention/device-mismatch__blind_b43_arange_token_index.py"]


@pytest.mark.parametrize("name", DEVICE_MECHANISMS)
def test_the_device_stage_sees(name):
    path = CORPUS / name
    (report,) = run_checks([Job(path, path.parent.name)], seed=SEED, timeout=LIMIT)
    names = [f.slug for f in report.findings]
    if path.name.startswith("ok__"):
        assert report.passed and "device-mismatch" not in names, names
    else:
        assert names[:1] == ["device-mismatch"], names


def expect_the_marked_line(path: Path) -> None:
    """Issue 18: the first finding gives the line that made the first wrong tensor, the line the file's author
    marked `# MISTAKE`."""
    report = reports_for(path)[path.resolve()]
    first = report.findings[0]
    assert first.slug == expected_slug(path), f"named {first.slug} first"
    assert first.line == marked_line(path), f"reported at line {first.line}, marked at {marked_line(path)}"
