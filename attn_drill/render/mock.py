"""What `watch`, `mock` and `stats` show, drawn with rich (the report itself is render/report.py's).

As in render/report.py, text from files, reports and the history goes into Text objects through render.text
(escaped, never parsed as markup), and the words carry the meaning when colour is off.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from attn_drill.render import explain as render_explain, report as render
from attn_drill.render.listing import duration
from attn_drill.practice.mock import HINT_COST
from attn_drill.render.report import say, text

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise
    from attn_drill.practice.questions import Question
    from attn_drill.report import Report

CLEAR = "\033[H\033[2J"  # home, clear screen


def clock(seconds: float) -> str:
    """A countdown's m:ss (negative shown as 0:00)."""
    s = max(0, int(seconds + 0.999))  # 0.2 s left still reads 0:01: the end comes at 0:00
    return f"{s // 60}:{s % 60:02d}"


def mmss(seconds: float) -> str:
    """A duration's m:ss, to the nearest second."""
    s = max(0, int(round(seconds)))
    return f"{s // 60}:{s % 60:02d}"


def _clear(out: Console) -> None:
    if out.is_terminal:
        out.file.write(CLEAR)
        out.file.flush()


# -- watch -----------------------------------------------------------------------------------------
def watch_intro(out: Console, ex: "Exercise", path: str) -> None:
    say(out, "Watching ", (path, "bold"), f" ({ex.id}, target {ex.minutes} min): every save is checked. "
             "Ctrl-C stops.")
    say(out, ("Starting the checker (torch loads once)...", "dim"))


def watch_report(out: Console, rep: "Report", ex: "Exercise") -> None:
    """The latest report: a fresh screen on a terminal, a rule between reports otherwise."""
    if out.is_terminal:
        _clear(out)
    else:
        out.rule()
    render.report(out, rep, ex)
    out.file.flush()


def watch_footer(out: Console, rep: "Report", ex: "Exercise", path: str, *, took: float | None,
                 best: float | None, after: list[str] = ()) -> None:
    if rep.passed and (took is not None or after):
        render.solved(out, ex, took, best, after)
    say(out, (f"{time.strftime('%H:%M:%S')}  watching {path}: save to check again, Ctrl-C to stop.", "dim"))
    out.file.flush()


def watch_checking(out: Console, path: str, again: bool) -> None:
    """A check has started (again: a newer save cancelled the one running)."""
    what = "saved again: the running check is stopped; checking…" if again else f"checking {path}…"
    say(out, (f"{time.strftime('%H:%M:%S')}  {what}", "yellow"))
    out.file.flush()


def watch_missing(out: Console, path: str, stopped: bool = False) -> None:
    what = "the running check is stopped; " if stopped else ""
    say(out, (f"{path} is gone; {what}waiting for it to come back (Ctrl-C stops).", "yellow"))


def watch_stopped(out: Console) -> None:
    say(out, "Stopped watching.")


# -- mock --------------------------------------------------------------------------------------------
ENDINGS = {"time": ("Time's up.", "bold yellow"), "quit": ("You ended the coding part.", "bold"),
           "pass": ("Passed: the coding part is done.", "bold green")}


class MockScreen:
    """The mock's screen. On a terminal the countdown is one line rewritten in place; in a pipe it is a
    line each time the minutes change. Anything else printed first ends the countdown line."""

    def __init__(self, out: Console):
        self.out, self.tty = out, out.is_terminal
        self._line, self._minute = "", None

    def _break(self) -> None:
        if self.tty and self._line:
            self.out.file.write("\r\033[K")
            self.out.file.flush()
        self._line = ""

    def intro(self, session, ex: "Exercise", path: str, *, resumed: bool, backup=None, note: str = "") -> None:
        out = self.out
        if note:
            say(out, (note, "yellow"))
        if resumed and session.phase != "coding":
            say(out, "Resuming your mock of ", (ex.id, "bold cyan"), " at the follow-up questions.")
            return
        if resumed:
            say(out, "Resuming your mock of ", (ex.id, "bold cyan"), f": {clock(session.left())} left "
                     f"(the clock kept running). Your file: ", (path, "bold"))
        else:
            why = f" ({session.reason})" if session.reason else ""
            say(out, "Mock interview: ", (ex.id, "bold cyan"), f"  {ex.title}{why}")
            if backup:
                say(out, "An older mock file was backed up to ", (str(backup), "bold"))
            say(out, "Your file: ", (path, "bold"))
            say(out, "(a fresh one: your practice file is not touched)")
        limit = f"{clock(session.limit_seconds)} on the clock, target {clock(session.target_seconds)}"
        mode = "strict: no hints, no feedback until one check at the end" if session.strict else \
            "every save is checked"
        say(out, f"{limit}; {mode}.")
        out.print()
        out.print(render.task(ex, out.width), soft_wrap=True)
        out.print()

    def coding(self, session, ex: "Exercise") -> None:
        keys = "q submit" if session.strict else "h hint · c check now · q end the coding part"
        say(self.out, ("Keys: ", "dim"), (keys, "dim"))
        say(self.out, ("Ctrl-C leaves; attn-drill mock resumes.", "dim"))

    def tick(self, session, left: float) -> None:
        text = f"⏱ {clock(left)} left · checks {session.checks} · hints {session.hints}"
        if self.tty:
            if text != self._line:
                self.out.file.write("\r\033[K" + text)
                self.out.file.flush()
                self._line = text
        elif clock(left).split(":")[0] != self._minute:
            self._minute = clock(left).split(":")[0]
            say(self.out, text)

    def hint(self, text: str | None, shown: int, total: int, about: str | None = None) -> None:
        """A hint, `about` the mistake the last check named (its own count), else one of the exercise's."""
        self._break()
        if text is None:
            say(self.out, f"No more hints (all {total} used).")
        else:
            which = f"hint for {about} {shown}/{total}  " if about else f"hint {shown}/{total}  "
            # the one wrapping rule, under the hint's first word; the cost on the last line
            line = render.hanging(which, f"{text}  (-{HINT_COST} points)", min(self.out.width, 80), "cyan", "bold")
            self.out.print(line, soft_wrap=True)

    def strict_no_hints(self) -> None:
        self._break()
        say(self.out, ("Strict mode: no hints, as at a whiteboard.", "yellow"))

    def strict_no_feedback(self) -> None:
        self._break()
        say(self.out, (f"{time.strftime('%H:%M:%S')} saved. Strict mode: your file is checked once, at the end.",
                       "dim"))

    def checking(self, session) -> None:
        self._break()
        if self.tty:
            self.out.file.write("checking...")
            self.out.file.flush()
            self._line = "checking..."

    def report(self, session, rep: "Report", ex: "Exercise") -> None:
        self._break()
        self.out.rule()
        render.report(self.out, rep, ex)
        self.out.rule()

    def ended(self, session, why: str) -> None:
        self._break()
        text, style = ENDINGS.get(why, (why, ""))
        say(self.out, (text, style), f"  ({mmss(session.used)} used)")

    def left(self, session) -> None:
        self._break()
        say(self.out, "Left the mock; its clock keeps running. ", ("attn-drill mock", "bold cyan"), " resumes it.")

    def question(self, q: "Question", i: int, n: int) -> None:
        self._break()
        out = self.out
        out.print()
        say(out, (f"Follow-up {i}/{n}", "bold cyan"), f"  ({', '.join(q.concepts)})")
        out.print(render.text(render.phrases(q.question, min(out.width, 80)), "bold"), soft_wrap=True)
        render_explain.choices(out, q.choices)
        self.out.file.write(f"answer (1-{len(q.choices)}, then Enter): ")
        self.out.file.flush()

    def tracing(self) -> None:
        self._break()
        say(self.out, ("Tracing your file for questions about your own lines...", "dim"))

    def explain_question(self, q: dict, i: int, n: int) -> None:
        """A follow-up on the user's own file (explain.py's question)."""
        from attn_drill.render import explain as render_explain

        self._break()
        render_explain.question(self.out, q, i, n, label="Follow-up")
        self.out.file.write(render_explain.ask(q))
        self.out.file.flush()

    def echo(self, typed: str) -> None:
        """Keys of a typed answer, shown as they come (the keyboard is read without echo)."""
        self.out.file.write(typed)
        self.out.file.flush()

    def explain_answer_given(self, q: dict, given: str | None, scripted: bool) -> None:
        """Echo the answer after the prompt: a typed one has echoed itself already."""
        self.answer_given(given, scripted)

    def answer_given(self, given, scripted: bool) -> None:
        """Echo a scripted answer after the prompt (a typed one has echoed itself, Enter included)."""
        if scripted:
            self.out.file.write(f"{'-' if given is None else given} (from --answers)\n")
        self.out.file.flush()

    def explain_answered(self, q: dict, given: str | None) -> None:
        from attn_drill.practice import explain
        from attn_drill.render import explain as render_explain

        render_explain.answered(self.out, q, given, explain.is_right(q, given))


    def answered(self, q: "Question", choice: int | None) -> None:
        if q.is_right(choice):
            say(self.out, ("✓ right.", "bold green"))
        else:
            given = "no answer" if choice is None else f"you said {choice}"
            self.out.print(render.hanging("✗ not quite ", f"({given}): the answer is {q.answer}) "
                                          f"{q.choices[q.answer - 1]}", min(self.out.width, 80), "bold red"),
                           soft_wrap=True)
        self.out.print(render.hanging("why: ", q.explanation, min(self.out.width, 80), "dim"), soft_wrap=True)

    def scorecard(self, card: dict, ex: "Exercise") -> None:
        out = self.out
        out.print()
        out.rule("scorecard")
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        for label, value in scorecard_rows(card, ex):
            grid.add_row(label, value)
        out.print(grid)
        out.rule()


def scorecard_rows(card: dict, ex: "Exercise") -> list[tuple[str, Text]]:
    strict = "  (strict)" if card.get("strict") else ""
    if card["passed"]:
        verdict = Text.assemble(("✓ passed", "bold green"))
    else:
        why = ", ".join(map(str, card.get("final_slugs") or [])) or (
            "never checked" if not card["checks"] else "did not pass")
        verdict = Text.assemble(("✗ failed", "bold red"), text(f": {why}", one_line=True))
    time_used = f"{mmss(card['seconds_used'])} used, target {mmss(card['target_seconds'])}"
    if card.get("limit_seconds") and card["limit_seconds"] != card["target_seconds"]:
        time_used += f" (limit {mmss(card['limit_seconds'])})"
    q, mine = card["questions"], card.get("explained") or {}
    mistakes = ", ".join(f"{m['slug']} x{m['count']}" for m in card.get("mistakes", [])) or "none"
    p = card["points"]
    hints = f" - hints {-p['hints']}" if p["hints"] else ""
    score = Text.assemble((f"{card['score']} / 100", "bold"),
                          f"   (pass {p['pass']} + time {p['time']} + questions {p['questions']}{hints})")
    return [
        ("exercise", Text.assemble((ex.id, "bold cyan"), f"  {ex.title}{strict}")),
        ("correctness", verdict),
        ("time", Text(time_used, style="green" if card["seconds_used"] <= card["target_seconds"] else "")),
        ("checks run", Text(str(card["checks"]))),
        ("hints used", Text(str(card["hints"]))),
        *([("explained", Text(f"{mine['right']} of {mine['total']} (your own lines)"))] if mine.get("total") else []),
        *([("questions", Text(f"{q['right']} / {q['total']} right"))] if q["total"] or not mine.get("total") else []),
        ("mistakes", text(mistakes, one_line=True)),
        ("score", score),
    ]


# -- stats -------------------------------------------------------------------------------------------
def stats(out: Console, data: dict) -> None:
    explained = data.get("explain") or {"rounds": 0}
    if not data["exercises"] and not data["mocks"]["count"] and not explained["rounds"]:
        say(out, "Nothing recorded yet: ", ("attn-drill start sdpa", "bold cyan"), ", then ",
            ("attn-drill check", "bold cyan"), " or ", ("attn-drill mock", "bold cyan"), ".")
        return
    if data["exercises"]:
        out.print(_exercise_table(data["exercises"]))
        if any(r["mistakes"] for r in data["exercises"]):
            out.print()
            out.print(_mistakes(data["exercises"]))
    mocks = data["mocks"]
    if mocks["count"]:
        out.print()
        out.print(_mock_table(mocks["recent"], mocks["count"]))
        t = mocks["trend"]
        if t["direction"]:
            say(out, "trend  ", (t["sparkline"], "cyan"), f"  {t['direction']} ({t['change']:+g} points, later half vs earlier)")
    if explained["rounds"]:
        out.print()
        out.print(_explain_table(explained))


def _explain_table(e: dict) -> Group:
    """Which kinds of question about your own code you miss (explain rounds and mocks' follow-ups)."""
    title = f"Explaining your own code ({e['rounds']} round{'s' if e['rounds'] != 1 else ''}, {e['right']} of " \
            f"{e['total']} right): what you miss"
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold")  # the title above: wider
    for name, justify in (("kind", "left"), ("asked", "right"), ("missed", "right"), ("", "left")):
        table.add_column(name, justify=justify, no_wrap=True)
    for k in e["kinds"]:
        share = k["missed"] / k["asked"] if k["asked"] else 0
        table.add_row(text(k["kind"], "cyan", one_line=True), str(k["asked"]), str(k["missed"]),
                      Text(KIND_WORDS.get(k["kind"], ""), style="red" if share >= 0.5 else "dim"))
    return Group(Text(title, style="italic"), table)


KIND_WORDS = {"shape": "the shape a line makes", "breaks": "what breaks if a line changes",
              "cost": "what a tensor costs at real sizes", "concept": "why a line does what it does"}


def _exercise_table(rows: list[dict]) -> Table:
    table = Table(title="Practice by exercise", title_justify="left", box=None, padding=(0, 1), pad_edge=False, header_style="bold")
    for name in ("exercise", "attempts", "passed", "checks", "best", "median", "target"):
        table.add_column(name, justify="left" if name == "exercise" else "right", no_wrap=True)
    for r in rows:
        target = r["target_seconds"]
        in_time = r["best_seconds"] is not None and target and r["best_seconds"] <= target
        table.add_row(text(r["id"], "cyan", one_line=True), str(r["attempts"]), str(r["passes"]), str(r["checks"]),
                      Text(duration(r["best_seconds"]), style="green" if in_time else ""),
                      duration(r["median_seconds"]), duration(target))
    return table


def _mistakes(rows: list[dict]) -> Table:
    table = Table(title="Most frequent mistakes", title_justify="left", box=None, padding=(0, 1), pad_edge=False, show_header=False)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for r in rows:
        if r["mistakes"]:
            table.add_row(text(r["id"], "cyan", one_line=True),
                          text(", ".join(f"{m['slug']} x{m['count']}" for m in r["mistakes"]), one_line=True))
    return table


def _mock_table(recent: list[dict], count: int) -> Table:
    title = f"Recent mocks (last {len(recent)} of {count})" if count > len(recent) else "Mocks"
    table = Table(title=title, title_justify="left", box=None, padding=(0, 1), pad_edge=False, header_style="bold")
    for name, justify in (("date", "left"), ("exercise", "left"), ("score", "right"), ("result", "left"),
                          ("time", "right"), ("questions", "right")):
        table.add_column(name, justify=justify, no_wrap=True)
    for m in recent:
        result = Text("passed", style="green") if m["passed"] else Text("failed", style="red")
        if m["strict"]:
            result.append(" (strict)", style="dim")
        table.add_row(m["ended_at"][:16].replace("T", " "), text(m["exercise"], "cyan", one_line=True), str(m["score"]),
                      result, f"{mmss(m['seconds_used'])} / {mmss(m['target_seconds'])}",
                      f"{m['questions_right'] + m.get('explained_right', 0)}/"  # every follow-up, as scored
                      f"{m['questions_total'] + m.get('explained_total', 0)}")
    return table
