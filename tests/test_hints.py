"""Hints that follow the diagnosis: after a failing check, `hint` gives the named mistake's hints first
(attn_drill/mistakes.toml, beside each slug's wording), then the exercise's own; `reset` clears what was seen."""

from __future__ import annotations

from typer.testing import CliRunner

from attn_drill import catalogue, cli, findings
from attn_drill.practice import hints
from attn_drill.store import history, state

SDPA = catalogue.get("sdpa")


def invoke(*args: str):
    return CliRunner().invoke(cli.get_app(), list(args))


def test_every_named_mistake_has_one_or_two_hints():
    """Every slug of the wording table, those added later too, must come with hints, and nothing else may."""
    table = hints.for_mistakes()
    assert set(table) == set(findings.WORDING), set(table) ^ set(findings.WORDING)
    for slug, hs in table.items():
        assert 1 <= len(hs) <= 2, slug
        assert all(isinstance(h, str) and h.strip() and len(h) <= 160 for h in hs), slug


def test_the_hints_ship_inside_the_package():
    from attn_drill import paths

    from attn_drill import findings

    assert findings.MISTAKES.parent == paths.PACKAGE and findings.MISTAKES.is_file()


def failed_with(slug: str, exercise: str = "sdpa") -> None:
    """A failing check of the started file, as `check` records it."""
    attempt = state.load().started_at(exercise)
    assert history.record_check(exercise, passed=False, slugs=[slug, "values-mismatch"], attempt=attempt)


def test_after_a_failing_check_the_mistakes_hints_come_first():
    invoke("start", "sdpa")
    failed_with("mask-inverted")
    first, second = hints.for_mistakes()["mask-inverted"]
    r = invoke("hint")
    assert r.exit_code == 0
    assert "mask-inverted 1/2" in r.stdout and first[:30] in r.stdout and "hint 1/" not in r.stdout
    r = invoke("hint")
    assert "mask-inverted 2/2" in r.stdout and second[:30] in r.stdout and "hint 1/" not in r.stdout
    r = invoke("hint")  # then the exercise's own
    assert "mask-inverted 2/2" in r.stdout and f"hint 1/{len(SDPA.hints)}" in r.stdout
    assert SDPA.hints[0][:30] in r.stdout
    assert f"{len(SDPA.hints) - 1} more" in r.stdout


def test_a_new_mistake_brings_its_own_hints():
    invoke("start", "sdpa")
    failed_with("mask-inverted")
    invoke("hint")
    failed_with("missing-scale")
    r = invoke("hint")
    assert "missing-scale 1/2" in r.stdout and "mask-inverted" not in r.stdout


def test_without_a_failing_check_the_hints_are_the_exercises():
    invoke("start", "sdpa")
    r = invoke("hint")
    assert f"hint 1/{len(SDPA.hints)}" in r.stdout and "1/2" not in r.stdout
    attempt = state.load().started_at("sdpa")
    history.record_check("sdpa", passed=True, slugs=[], attempt=attempt)
    assert "hint 2/" in invoke("hint").stdout


def test_hint_all_shows_the_mistakes_and_the_exercises():
    invoke("start", "sdpa")
    failed_with("missing-scale")
    r = invoke("hint", "--all")
    assert "missing-scale 2/2" in r.stdout and f"hint {len(SDPA.hints)}/{len(SDPA.hints)}" in r.stdout


def test_reset_clears_the_hints_seen(isolated):
    invoke("start", "sdpa")
    failed_with("mask-inverted")
    invoke("hint")
    invoke("hint")
    invoke("hint")
    assert state.load().hints_shown("sdpa") == 1 and hints.seen_for(state.load(), "sdpa") == {"mask-inverted": 2}
    (isolated / "attn-practice" / "sdpa.py").write_text("# my work\n")
    assert invoke("reset", "sdpa", "--yes").exit_code == 0
    st = state.load()
    assert st.hints_shown("sdpa") == 0 and hints.seen_for(st, "sdpa") == {}
    r = invoke("hint")  # the old attempt's mistake is not this attempt's
    assert f"hint 1/{len(SDPA.hints)}" in r.stdout and "mask-inverted" not in r.stdout
