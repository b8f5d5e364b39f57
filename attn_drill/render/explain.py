"""What `attn-drill explain` and the mock's follow-up on the user's own code show, drawn with rich.

Everything is wrapped at words to the console's width (80 columns in a plain terminal): a question is a
header, the user's line (whole, wrapped at spaces outside brackets where it can be), the prompt and its choices, each choice
indented under its number. Text from the user's file goes through render.text (escaped).
"""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.text import Text

from attn_drill.i18n import t
from attn_drill.practice import explain
from attn_drill.render.report import hanging, phrases, say_key, text
from attn_drill.say import cells


def header(out: Console, ex_id: str, path: str, r: "explain.Round") -> None:
    say_key(out, "practice.explain.screen.header", path=(path, "bold"), id=ex_id, n=len(r.questions))
    out.print(Text.assemble((t("practice.explain.screen.traced"), "dim"), text(r.case, one_line=True)))
    out.print(Text.assemble((t("practice.explain.screen.inputs"), "dim"), text(r.given, one_line=True)))
    out.print(Text(t("practice.explain.screen.how"), style="dim"))


def kind(name: str) -> str:
    """A question's kind (shape, breaks, cost, concept) as the screen names it."""
    return t(f"practice.explain.screen.kind.{name}") if name in explain.KINDS else name


def question(out: Console, q: dict, i: int, n: int, label: str | None = None) -> None:
    out.print()
    label = t("practice.explain.screen.question") if label is None else label
    out.print(Text.assemble((f"{label} {i}/{n}", "bold cyan"), (f"  {kind(q['kind'])}", "dim")))
    if q.get("line"):
        code = explain.shown(q.get("code") or "")  # mutants.py gives the raw line: its comment goes
        lead = t("practice.explain.screen.line", line=q["line"])
        for k, part in enumerate(wrap_code(code, max(20, min(out.width, 80) - cells(lead)))):
            out.print(Text.assemble((lead if k == 0 else " " * cells(lead), "cyan"), text(part, "bold", one_line=True)))
    out.print(text(phrases(q["prompt"], min(out.width, 80)), "bold"), soft_wrap=True)
    choices(out, q.get("choices") or ())


def choices(out: Console, items) -> None:
    """Numbered choices, each wrapped by the one rule under its own text (a hanging indent), at most 80 columns."""
    for k, choice in enumerate(items, 1):
        out.print(hanging(f"  {k}) ", str(choice), min(out.width, 80), "cyan"), soft_wrap=True)


def wrap_code(code: str, width: int) -> list[str]:
    """A line of code in pieces of at most `width`, broken only at spaces, outside brackets where it can be
    (`x = a.view(B, T, H, d)` breaks before `a.view(...)`, never inside `(B, T,`), each piece whole."""
    pieces, rest = [], code
    while len(rest) > width:
        depth, best = 0, None  # best: (depth, -position) of the space to break at, shallowest then rightmost
        for i, ch in enumerate(rest[:width + 1]):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if ch == " " and i > 0 and (best is None or (depth, -i) < best):
                best = (depth, -i)
        if best is None:  # one unbreakable token: keep it whole
            cut = rest.find(" ", width)
            if cut < 0:
                break
        else:
            cut = -best[1]
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return pieces + [rest]


def ask(q: dict) -> str:
    """The prompt the answer is typed after."""
    return t("mock.answer_prompt", n=len(q["choices"])) if q.get("choices") else t("practice.explain.screen.ask_shape")


def answered(out: Console, q: dict, given: str | None, right: bool) -> None:
    if right:
        out.print(Text(t("mock.right"), style="bold green"))
    else:
        said = t("mock.no_answer") if given is None or not given.strip() else \
            t("practice.explain.screen.you_said", given=given.strip())
        answer = t("practice.explain.screen.the_answer", said=said, truth=explain.truth(q))
        out.print(hanging(t("mock.not_quite"), answer, min(out.width, 80), "bold red"), soft_wrap=True)
    out.print(hanging(t("mock.why"), q.get("explain") or "", min(out.width, 80), "dim"), soft_wrap=True)


def tally(out: Console, questions: list[dict], answers: list) -> None:
    """"Explained 3 of 5" and, when some were missed, which kinds."""
    right = [explain.is_right(q, a) for q, a in zip(questions, answers)]
    missed = Counter(q["kind"] for q, ok in zip(questions, right) if not ok)
    line = Text.assemble((t("practice.explain.screen.explained", right=sum(right), total=len(questions)), "bold"))
    if missed:
        kinds = t("practice.explain.screen.sep").join(t("practice.explain.screen.missed_kind", kind=kind(k), n=n)
                                                      for k, n in missed.items())
        line.append(t("practice.explain.screen.missed", kinds=kinds))
    out.print()
    out.print(line)
