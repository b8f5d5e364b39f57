"""One wrapping rule for every screen: every finding's wording, every hint, every question and every task, drawn at
80 columns as the user sees them, never breaks inside a code span, a shape or a formula, keeps within 80
columns and ends no line in spaces. What must not break is found here by patterns of this test's own, not by the
renderer's, so a span the renderer does not protect fails."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from attn_drill import catalogue, findings
from attn_drill.practice import hints, questions
from attn_drill.render import explain as render_explain, report as render

WIDTH = 80
UNBROKEN = [
    r"`[^`\n]{1,50}`",  # a code span
    r"\((?:[A-Za-z_][\w*/+.]*|\d+)(?:, (?:[A-Za-z_][\w*/+.]*|\d+|\.\.\.)){1,5}\)",  # a shape: (B, H, Tq, Tk)
    r"\b[\w.]+ (?:==|!=|//|<=|>=) [\w.]+",  # B == H, d_model // num_heads
    r"\b[A-Z]\w* x [a-zA-Z]\w*\b",  # H x d
    r"\b[a-z]\w* \* exp\([^()]{1,30}\)",  # l * exp(m_old - m_new)
]


def drawn(renderable, soft_wrap: bool = True) -> list[str]:
    """What the screen shows: printed as the commands print it (pre-wrapped text with soft_wrap, a report's
    finding without), on an 80-column console that strips trailing spaces as render.console() does."""
    out = Console(file=render._NoTrailingSpaces(io.StringIO()), width=WIDTH, color_system=None, highlight=False,
                  emoji=False)
    out.print(renderable, soft_wrap=soft_wrap)
    return out.file._stream.getvalue().splitlines()


def spans(text: str) -> list[str]:
    return [m.group() for pattern in UNBROKEN for m in re.finditer(pattern, text)]


def assert_unbroken(source: str, lines: list[str], what: str) -> None:
    flat = [re.sub(r"\s+", " ", line.strip()) for line in lines]
    for span in spans(source):
        assert any(span in line for line in flat), f"{what}: {span!r} is broken across lines:\n" + "\n".join(lines)
    for line in lines:
        assert len(line) <= WIDTH, f"{what}: a line of {len(line)} columns: {line!r}"
        assert line == line.rstrip(" "), f"{what}: trailing spaces: {line!r}"


def test_the_patterns_find_what_they_must():
    assert spans("use `d = d_model // num_heads` on (B, H, Tq, Tk) when B == H and D is H x d; "
                 "l * exp(m_old - m_new)") == ["`d = d_model // num_heads`", "(B, H, Tq, Tk)", "d_model // num_heads",
                                               "B == H", "H x d", "l * exp(m_old - m_new)"]


@pytest.mark.parametrize("slug", sorted(findings.WORDING))
def test_every_findings_wording(slug):
    f = findings.make(slug, "on every case, e.g. q (2, 3, 5, 7), k (2, 3, 6, 7), v (2, 3, 6, 4), mask (2, 1, 5, 6) "
                      "with B == H", line=12, name="self.W_q", where="in __init__", expected="f(q, k, v, mask=None)",
                      what="out", step="the scores", dtype="float32", fix="Divide by `math.sqrt(d)`.")
    lines = drawn(render.finding(f, "scores = q @ k.transpose(-2, -1)", width=WIDTH), soft_wrap=False)
    assert_unbroken(" ".join([f.title, f.evidence, f.fix, f.message]), lines, slug)


def test_every_hint():
    for slug, said in hints.for_mistakes().items():
        for i, h in enumerate(said, 1):
            assert_unbroken(h, drawn(render.hanging(f"{slug} {i}/{len(said)}  ", h, WIDTH)), f"{slug} hint {i}")
    for ex in catalogue.exercises().values():
        for i, h in enumerate(ex.hints, 1):
            assert_unbroken(h, drawn(render.hanging(f"hint {i}/{len(ex.hints)}  ", h, WIDTH)), f"{ex.id} hint {i}")


def test_every_question_its_choices_and_why():
    for q in questions.bank().values():
        lines = drawn(render.text(render.phrases(q.question, WIDTH), "bold"))
        out = io.StringIO()
        console = Console(file=render._NoTrailingSpaces(out), width=WIDTH, color_system=None)
        render_explain.choices(console, q.choices)
        lines += out.getvalue().splitlines() + drawn(render.hanging("why: ", q.explanation, WIDTH))
        assert_unbroken(" ".join([q.question, *q.choices, q.explanation]), lines, q.id)


def test_every_task():
    for ex in catalogue.exercises().values():
        assert_unbroken(ex.task, drawn(render.task(ex, WIDTH)), ex.id)


def test_a_long_asked_line_is_shown_whole_under_its_indent():
    code = "scores = torch.einsum(\"bhqd,bhkd->bhqk\", q, k) / math.sqrt(d) + self.rel_bias(pos).permute(2, 0, 1)"
    out = io.StringIO()
    console = Console(file=render._NoTrailingSpaces(out), width=WIDTH, color_system=None)
    render_explain.question(console, {"kind": "shape", "line": 23, "code": code, "prompt": "What shape?",
                                      "choices": None}, 1, 4)
    lines = out.getvalue().splitlines()
    body = [line for line in lines if line.startswith("line 23  ") or line.startswith(" " * 9)]
    assert "…" not in out.getvalue() and " ".join(b[9:] for b in body) == code
    assert all(len(line) <= WIDTH for line in lines)
