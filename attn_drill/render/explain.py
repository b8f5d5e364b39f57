"""What `attn-drill explain` and the mock's follow-up on the user's own code show, drawn with rich.

Everything is wrapped at words to the console's width (80 columns in a plain terminal): a question is a
header, the user's line (cut to fit, as explain.code_of made it), the prompt and its choices, each choice
indented under its number. Text from the user's file goes through render.text (escaped).
"""

from __future__ import annotations

import textwrap
from collections import Counter

from rich.console import Console
from rich.text import Text

from attn_drill.practice import explain
from attn_drill.render.report import say, text

SHAPE_HELP = "symbols, e.g. B H Tq Tk"


def header(out: Console, ex_id: str, path: str, r: "explain.Round") -> None:
    say(out, "Explain ", (path, "bold"), f" ({ex_id}): {len(r.questions)} questions about your own lines.")
    out.print(Text.assemble(("traced on ", "dim"), text(r.case, one_line=True)))
    out.print(Text.assemble(("inputs    ", "dim"), text(r.given, one_line=True)))
    out.print(Text("Answer shapes in symbols (B H Tq Tk, or (B, H, Tq, Tk)); choices by number.", style="dim"))


def question(out: Console, q: dict, i: int, n: int, label: str = "Question") -> None:
    out.print()
    out.print(Text.assemble((f"{label} {i}/{n}", "bold cyan"), (f"  {q['kind']}", "dim")))
    if q.get("line"):
        code = explain.shown(q.get("code") or "")  # mutants.py gives the raw line: its comment goes
        out.print(Text.assemble((f"line {q['line']}  ", "cyan"), text(code, "bold", one_line=True)))
    out.print(text(q["prompt"], "bold"))
    for k, choice in enumerate(q.get("choices") or (), 1):
        # wrapped by hand under its number: a table would pad every line with spaces to the widest
        lines = textwrap.wrap(str(choice), max(20, out.width - 6)) or [""]
        out.print(Text.assemble((f"  {k}) ", "cyan"), text(lines[0], one_line=True)))
        for more in lines[1:]:
            out.print(Text.assemble("     ", text(more, one_line=True)))


def ask(q: dict) -> str:
    """The prompt the answer is typed after."""
    return f"answer (1-{len(q['choices'])}): " if q.get("choices") else f"answer ({SHAPE_HELP}): "


def answered(out: Console, q: dict, given: str | None, right: bool) -> None:
    if right:
        out.print(Text("✓ right.", style="bold green"))
    else:
        said = "no answer" if given is None or not given.strip() else f"you said {given.strip()}"
        out.print(Text.assemble(("✗ not quite", "bold red"), text(f" ({said}): the answer is {explain.truth(q)}")))
    out.print(Text.assemble(("why: ", "dim"), text(q.get("explain") or "")))


def tally(out: Console, questions: list[dict], answers: list) -> None:
    """"Explained 3 of 5" and, when some were missed, which kinds."""
    right = [explain.is_right(q, a) for q, a in zip(questions, answers)]
    missed = Counter(q["kind"] for q, ok in zip(questions, right) if not ok)
    line = Text.assemble(("Explained ", "bold"), (f"{sum(right)} of {len(questions)}", "bold"))
    if missed:
        line.append(f"; missed: {', '.join(f'{k} x{n}' for k, n in missed.items())}")
    out.print()
    out.print(line)
