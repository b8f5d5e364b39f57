"""stats: attempts, passes, solve times and mistakes from the history; mock scores and their trend; the
command's text and --json; and `check` feeding the history."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from attn_drill import catalogue, cli
from attn_drill.store import history
from attn_drill.practice import stats

SDPA = catalogue.get("sdpa")


def invoke(*args: str):
    return CliRunner().invoke(cli.get_app(), list(args))


def check(exercise, passed, slugs=(), attempt=None, solve=None, at=100.0):
    history.record_check(exercise, passed=passed, slugs=list(slugs), attempt=attempt, solve_seconds=solve, at=at)


def card(i: int, score: int, exercise="sdpa", passed=True) -> dict:
    return {"id": f"m{i}", "exercise": exercise, "started_at": 1000.0 * i, "ended_at": 1000.0 * i + 90,
            "strict": i % 2 == 0, "passed": passed, "seconds_used": 90.0, "target_seconds": 180.0, "score": score,
            "hints": 0, "questions": {"ids": [], "answers": [], "right": 2, "total": 3}}


def fill() -> None:
    # mha: attempt A solved at 300 s (passes again later: still 300), attempt B at 200 s, attempt C unsolved
    check("mha", False, ["wrong-head-merge", "missing-scale"], "A")
    check("mha", False, ["wrong-head-merge"], "A")
    check("mha", True, [], "A", solve=300.0)
    check("mha", True, [], "A", solve=420.0)
    check("mha", False, ["missing-scale"], "B")
    check("mha", True, [], "B", solve=200.0)
    check("mha", False, ["wrong-head-merge"], "C")
    check("mha", True, [], None)  # some other file: a check, not an attempt
    check("sdpa", False, ["mask-inverted"], "D", at=50.0)
    check("no-longer-an-exercise", True, [], "E")


def test_per_exercise_numbers():
    fill()
    data = stats.compute()
    rows = {r["id"]: r for r in data["exercises"]}
    assert [r["id"] for r in data["exercises"]] == ["sdpa", "mha", "no-longer-an-exercise"]  # catalogue order
    mha = rows["mha"]
    assert (mha["checks"], mha["passing_checks"], mha["attempts"], mha["passes"]) == (8, 4, 3, 2)
    assert (mha["best_seconds"], mha["median_seconds"]) == (200.0, 250.0)
    assert mha["mistakes"] == [{"slug": "wrong-head-merge", "count": 3}, {"slug": "missing-scale", "count": 2}]
    assert mha["target_seconds"] == catalogue.get("mha").minutes * 60
    sdpa = rows["sdpa"]
    assert (sdpa["attempts"], sdpa["passes"], sdpa["best_seconds"], sdpa["median_seconds"]) == (1, 0, None, None)
    assert rows["no-longer-an-exercise"]["title"] is None


def test_mock_scores_and_trend():
    for i, score in enumerate([40, 50, 45, 70, 80, 85], 1):
        history.record_mock(card(i, score))
    m = stats.compute(recent=4)["mocks"]
    assert m["count"] == 6 and [r["score"] for r in m["recent"]] == [45, 70, 80, 85]
    assert m["recent"][0]["strict"] is False and m["recent"][1]["strict"] is True
    t = m["trend"]
    assert t["scores"] == [45, 70, 80, 85] and t["direction"] == "up" and t["change"] == 25.0
    assert len(t["sparkline"]) == 4 and t["sparkline"][0] < t["sparkline"][-1]


def test_trend_directions():
    assert stats.trend([80, 60])["direction"] == "down"
    assert stats.trend([70, 72, 71])["direction"] == "flat"
    assert stats.trend([55])["direction"] is None
    assert stats.trend([0, 100])["sparkline"] == "▁█"


def test_the_command_shows_the_same_data_as_json():
    fill()
    history.record_mock(card(1, 60))
    history.record_mock(card(2, 90))
    r = invoke("stats", "--json")
    assert r.exit_code == 0
    assert json.loads(r.stdout) == json.loads(json.dumps(stats.compute()))
    text = invoke("stats").stdout
    mha_line = next(line for line in text.splitlines() if line.strip().startswith("mha "))
    assert mha_line.split()[1:5] == ["3", "2", "8", "3m"]  # attempts, passed, checks, best 3m 20s
    assert "wrong-head-merge x3, missing-scale x2" in text
    assert "up (+30 points" in text and "2/3" in text


def test_nothing_recorded_yet():
    r = invoke("stats")
    assert r.exit_code == 0 and "Nothing recorded yet" in r.stdout
    assert json.loads(invoke("stats", "--json").stdout) == {
        "exercises": [], "mocks": {"count": 0, "recent": [], "trend": stats.trend([])},
        "explain": {"rounds": 0, "right": 0, "total": 0, "kinds": []}}


def test_check_feeds_the_history(isolated):
    assert invoke("start", "sdpa").exit_code == 0
    practice = isolated / "attn-practice" / "sdpa.py"
    practice.write_text(SDPA.reference.read_text().replace("masked_fill(~mask, ", "masked_fill(mask, "))
    r = invoke("check", "--seed", "1")
    assert r.exit_code == 1, r.output  # mask-inverted
    shutil.copyfile(SDPA.reference, isolated / "attn-practice" / "sdpa.py")
    r = invoke("check", "--seed", "2")
    assert r.exit_code == 0, r.output
    other = isolated / "elsewhere" / "sdpa.py"
    other.parent.mkdir()
    shutil.copyfile(SDPA.reference, other)
    r = invoke("check", str(other))
    assert r.exit_code == 0, r.output
    rows = history.checks("sdpa")
    assert [(r["passed"], r["source"], r["seed"]) for r in rows[:2]] == [(False, "check", 1), (True, "check", 2)]
    assert rows[0]["slugs"] and rows[1]["slugs"] == [] and rows[0]["duration"] is not None
    assert rows[0]["attempt"] == rows[1]["attempt"] is not None and rows[2]["attempt"] is None
    assert rows[1]["solve_seconds"] is not None and rows[2]["solve_seconds"] is None
    s = stats.compute()["exercises"][0]
    assert (s["checks"], s["attempts"], s["passes"]) == (3, 1, 1)


def test_scorecards_and_rows_written_by_someone_else_never_break_stats():
    """SQLite checks neither types nor JSON: a row or a card of the wrong shape is skipped or shown as '?'."""
    history.record_mock(card(1, 80))
    check("mha", False, ["missing-scale"])
    foreign = [{**card(2, 60), "questions": "lost", "passed": "yes"},  # shown, with what is usable
               {**card(3, 50), "score": "high"},  # skipped: no number to plot
               {**card(4, 70), "ended_at": 1e300}]  # a time no clock can show
    with history.connect() as conn:
        for i, c in enumerate(foreign, 2):
            conn.execute("INSERT INTO mocks VALUES (?, 'sdpa', 0, ?, 0, 1, 1, 1, 1, ?)", (c["id"], i, json.dumps(c)))
        conn.execute("INSERT INTO checks (exercise, at, passed) VALUES ('mha', 'tuesday', 0)")
    data = stats.compute()
    recent = {m["id"]: m for m in data["mocks"]["recent"]}
    assert sorted(recent) == ["m1", "m2", "m4"]
    assert recent["m2"]["questions_total"] == 0 and recent["m2"]["passed"] is False
    assert recent["m4"]["ended_at"] == "?"
    assert data["exercises"][0]["checks"] == 1
    r = invoke("stats")
    assert r.exit_code == 0 and "Mocks" in r.stdout and "m4" not in r.stdout


def test_stats_fit_80_columns_without_cutting_a_word():
    fill()
    for i, ex in enumerate(("kv-cache", "mha-fused", "sdpa", "flash")):
        history.record_mock(card(i + 1, 20 * i + 15, exercise=ex, passed=i % 2 == 1))
    r = CliRunner().invoke(cli.get_app(), ["stats"], env={"COLUMNS": "80"})
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert "…" not in r.stdout and max(len(line.rstrip()) for line in lines) <= 80
    header = next(line for line in lines if line.startswith("date"))
    assert header.split() == ["date", "exercise", "score", "result", "time", "questions"]
    assert any("mha-fused" in line and "passed (strict)" in line for line in lines)  # words whole
    assert any("kv-cache" in line and "failed" in line for line in lines)
