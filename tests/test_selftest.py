"""One catalogue, one self-test: each skeleton is reported not started, each reference passes clean."""

from attn_drill import catalogue
from attn_drill.commands.selftest import selftest


def test_every_skeleton_fails_and_every_reference_passes():
    results = selftest(seed=7)
    assert {(r.exercise, r.kind) for r in results} == {
        (e, k) for e in catalogue.exercises() for k in ("skeleton", "reference")}
    bad = [r for r in results if not r.ok]
    assert not bad, bad


def test_catalogue_entries_are_complete():
    for e in catalogue.exercises().values():
        assert e.skeleton.is_file() and e.reference.is_file(), e.id
        assert len(e.hints) >= 3 and e.task and e.minutes > 0, e.id
        source = e.skeleton.read_text()
        assert all(name in source for name in e.names), e.id
