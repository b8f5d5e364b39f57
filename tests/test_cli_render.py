"""How a report reads: on a plain console (NO_COLOR, a pipe) every piece of information is in the text."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from attn_drill import findings
from attn_drill.render import listing, report as render
from attn_drill.report import FAIL, PASS, SKIP, WARN, Report, Stage


def plain(width: int = 120) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, no_color=True, width=width, highlight=False), buf


def causal(t: int) -> list[list[float]]:
    return [[round(1 / (i + 1), 3) if j <= i else 0.0 for j in range(t)] for i in range(t)]


def failing_report() -> Report:
    rep = Report("mha", "/somewhere/mha.py", 1234, seconds=0.8)
    rep.stages = [Stage("load", PASS, "the file imports"), Stage("values", FAIL, "2 of 5 cases differ"),
                  Stage("gradients", WARN, "W_o got no gradient"), Stage("device", SKIP, "skipped: earlier failure")]
    anti = [list(reversed(row)) for row in causal(4)]
    rep.findings = [  # a warning first: the renderer must put the error before it
        findings.make("backward-fails", "W_o.weight.grad is None", score=1.0),
        findings.make("mask-inverted", "weights[0, 0, 0] = [0.0, 0.5, 0.5, 0.0] [expected] [bold]x[/bold]", line=23,
                      score=0.9, picture={"title": "weights (batch 0, head 1)", "yours": anti,
                                          "expected": causal(4), "caption": "q (2, 4, 8)"}),
    ]
    return rep


def test_a_failing_report_has_everything_in_plain_text():
    out, buf = plain()
    render.report(out, failing_report())
    text = buf.getvalue()
    assert "\x1b[" not in text  # no colour codes at all
    assert "/somewhere/mha.py" in text and "replay with --seed 1234" in text
    assert re.search(r"stages +✓ load  ✗ values  ! gradients  - device", text)  # one line of marks
    assert "2 of 5 cases differ" in text and "W_o got no gradient" in text  # the failed and warned stages' details
    assert "skipped: earlier failure" not in text  # the others' only with -v
    assert text.index("mask-inverted") < text.index("backward-fails")  # errors first
    assert text.index("backward-fails") < text.index("stages")  # the named mistakes before the stages
    assert "The mask is inverted" in text and re.search(r"your line +23", text)
    assert "[expected] [bold]x[/bold]" in text  # evidence printed as written, not as markup
    assert "masked_fill(~mask" in text  # the fix
    assert "True means 'may attend'" in text  # the why
    assert text.rstrip().splitlines()[-1].startswith("FAILED  mha  1 error, 1 warning")


def test_verbose_shows_every_stage_on_its_own_line():
    out, buf = plain()
    render.report(out, failing_report(), verbose=True)
    lines = buf.getvalue().splitlines()
    for mark, name, detail in (("✓ pass", "load", "the file imports"), ("✗ fail", "values", "2 of 5 cases differ"),
                               ("! warn", "gradients", "W_o got no gradient"),
                               ("- skipped", "device", "skipped: earlier failure")):
        assert any(re.match(rf"{mark} +{name} +{detail}", line) for line in lines), (name, lines)


def test_at_80_columns_nothing_is_cut_and_words_stay_whole():
    out, buf = plain(80)
    render.report(out, failing_report())
    text = buf.getvalue()
    assert all(len(line.rstrip()) <= 80 for line in text.splitlines())
    words = set(re.findall(r"[A-Za-z_']{3,}", text))  # every word of the fix and the why comes whole
    for value in (failing_report().findings[1].fix, failing_report().findings[1].message):
        assert set(re.findall(r"[A-Za-z_']{3,}", value)) <= words


def test_the_heatmaps_stand_side_by_side():
    out, buf = plain()
    render.report(out, failing_report())
    lines = buf.getvalue().splitlines()
    header = next(i for i, line in enumerate(lines) if "yours" in line and "expected" in line)
    q0 = lines[header + 2]
    assert q0.count("q0") == 2
    assert "██" in q0  # expected: query 0 sees only key 0, all of its weight
    assert "weights (batch 0, head 1)" in buf.getvalue() and "q (2, 4, 8)" in buf.getvalue()


def test_a_passing_report():
    rep = Report("sdpa", "/x/sdpa.py", 0, stages=[Stage("load", PASS), Stage("values", PASS)])
    rep.findings = [findings.make("dtype-not-preserved", "float16 in, float32 out", expected="float16")]
    out, buf = plain()
    render.report(out, rep)
    assert buf.getvalue().rstrip().splitlines()[-1].startswith("PASSED  sdpa  0 errors, 1 warning")
    assert "! warning  dtype-not-preserved" in buf.getvalue()


@pytest.mark.parametrize("value, char", [(0.0, " "), (1e-9, " "), (0.1, "░"), (0.3, "▒"), (0.6, "▓"),
                                         (0.9, "█"), (1.0, "█"), (float("nan"), "?"), (-1.0, "?"), (None, "?")])
def test_shades(value, char):
    assert render.shade(value) == char


def test_large_pictures_are_cut_with_a_note():
    t = 20
    text = render.heatmap("yours", causal(t)).plain
    assert f"first {render.HEATMAP_MAX} of {t} queries" in text
    assert "q11" in text and "q12" not in text


@pytest.mark.parametrize("pic", [{}, {"yours": "nope", "expected": [[1.0]]}, {"yours": [[1.0]], "expected": []}])
def test_unusable_pictures_are_skipped(pic):
    assert render.picture(pic) is None


def test_differing_cells_are_red_on_a_colour_console(monkeypatch):
    monkeypatch.delenv("NO_COLOR")
    buf = io.StringIO()
    out = Console(file=buf, force_terminal=True, color_system="standard", width=100)
    out.print(render.heatmap("yours", [[1.0, 0.0]], other=[[0.0, 1.0]]))
    text = buf.getvalue()
    assert "\x1b[31m██" in text  # the differing full cell, in red
    assert "\x1b[1m" not in text.splitlines()[2]  # only the title is bold, not the rows


@pytest.mark.parametrize("seconds, text", [(None, "-"), (4.4, "4s"), (65, "1m 05s"), (3725, "1h 02m")])
def test_duration(seconds, text):
    assert listing.duration(seconds) == text


def hostile_report() -> Report:
    """Everything in a report that comes from the user's code or file system, full of terminal controls."""
    rep = Report("sdpa", "/w/x\x1b[2J_sdpa.py", 5, seconds=0.3,
                 output="\x1b]0;pwned\x07\x1b[31mRED\x1b[0m\rPASSED\nsecond line\ttabbed")
    rep.stages = [Stage("load", PASS), Stage("shapes", FAIL, "raised \x1b[32mPASSED\x1b[0m")]
    rep.findings = [findings.make("exception", "ValueError: \x1b[32mPASSED\x1b[0m \u202eevil\x9b2J", line=4,
                                  picture={"title": "t\x1b[5m", "caption": "c\x1b[8m", "yours": [[1.0]],
                                           "expected": [[1.0]]})]
    return rep


@pytest.mark.parametrize("colour", [False, True])
def test_control_characters_from_the_user_are_shown_not_acted_on(colour, monkeypatch):
    """ESC would let a file clear the screen or print its own green PASSED; \\r rewrites the line, BEL
    rings, U+202E reverses what follows. The plain console must hold no control character at all; the
    colour one only rich's own colour codes."""
    if colour:
        monkeypatch.delenv("NO_COLOR")
    buf = io.StringIO()
    out = Console(file=buf, force_terminal=colour, color_system="standard" if colour else None, width=200,
                  highlight=False)
    render.report(out, hostile_report())
    text = buf.getvalue()
    for raw in ("\x1b[2J", "\x1b[32mPASSED", "\x1b]0;", "\x07", "\r", "\u202e", "\x9b", "\x1b[5m", "\x1b[8m"):
        assert raw not in text
    if not colour:
        assert "\x1b" not in text
    for shown in ("x\\x1b[2J_sdpa.py", "raised \\x1b[32mPASSED\\x1b[0m", "\\u202eevil\\x9b2J",
                  "\\x1b]0;pwned\\x07\\x1b[31mRED\\x1b[0m\\rPASSED", "t\\x1b[5m", "c\\x1b[8m"):
        assert shown in text
    assert "second line" in text and "tabbed" in text  # newlines and tabs of the output keep their layout


def test_say_escapes_every_part():
    out, buf = plain()
    render.say(out, "wrote ", ("/p/\x1b[2Jx.py", "bold"), " ok\x1b[0m")
    assert buf.getvalue() == "wrote /p/\\x1b[2Jx.py ok\\x1b[0m\n"


def test_a_sandbox_wall_that_is_missing_is_said_once_and_none_when_all_are_up():
    rep = failing_report()
    out, buf = plain()
    render.report(out, rep)
    assert "sandbox" not in buf.getvalue()
    rep.confinement = "Landlock ABI 3: other processes can be sent signals"
    out, buf = plain()
    render.report(out, rep)
    lines = [line for line in buf.getvalue().splitlines() if "sandbox" in line]
    assert len(lines) == 1 and "not fully confined: Landlock ABI 3" in lines[0]


def test_details_wrap_between_phrases_never_inside_a_shape_or_a_run_of_sizes():
    label = "B=2 H=3 Tq=5 Tk=6 d=7 (D=21), mask (2, 1, 5, 6)"
    detail = f"q (2, 3, 5, 7), k (2, 3, 6, 7), v (2, 3, 6, 4), {label}: out differs first at (batch 0, head 0, " \
             "query 0, feature 0): yours -0.1236, expected 0.1174; max abs error 2.43 (tolerance 1e-05 + 0.0001*|e|)"
    rep = Report("mha", "/x/mha.py", 3, stages=[Stage("load", PASS), Stage("values", FAIL, detail)])
    rep.findings = [findings.make("values-mismatch", detail + "; " + detail)]
    for width in (60, 80, 100):
        out, buf = plain(width)
        render.report(out, rep)
        lines = buf.getvalue().splitlines()
        assert max(len(line.rstrip()) for line in lines) <= width
        for phrase in ("(2, 3, 5, 7)", "(2, 1, 5, 6)", "B=2 H=3 Tq=5 Tk=6 d=7", "(batch 0, head 0, query 0, feature 0)",
                       "(tolerance 1e-05 + 0.0001*|e|)"):
            flat = " ".join(buf.getvalue().split())  # every occurrence sits whole on one line
            assert sum(line.count(phrase) for line in lines) == flat.count(phrase) > 0, (width, phrase)


def test_a_long_title_wraps_by_the_one_rule_under_its_first_character():
    """A finding's title is wrapped as its evidence is, never by rich at any space: under zh at 80 columns the
    layer's title once broke inside its parenthesis ("合并多头（merge" / "heads）")."""
    from rich.cells import cell_len

    from attn_drill.report import Finding

    title = "self_attn 和 cross_attn 中：合并多头（merge heads）时没有先把头维度移回去"
    f = Finding("wrong-head-merge", "error", title, "why", "evidence", "fix")
    out, buf = plain(80)
    out.print(render.finding(f, width=80))
    first, second = buf.getvalue().splitlines()[:2]
    assert cell_len(first) <= 80 and "（merge heads）" in first + second and not first.endswith("（merge")
    assert second.startswith(" " * first.index("self_attn")) and second.strip(), (first, second)
