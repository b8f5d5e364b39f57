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
from attn_drill.i18n import t
from attn_drill.render.report import say, say_key, text

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
    say_key(out, "watch.intro", path=(path, "bold"), id=ex.id, minutes=ex.minutes)
    say(out, (t("watch.starting"), "dim"))


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
    say(out, (t("watch.footer", now=time.strftime('%H:%M:%S'), path=path), "dim"))
    out.file.flush()


def watch_checking(out: Console, path: str, again: bool) -> None:
    """A check has started (again: a newer save cancelled the one running)."""
    what = t("watch.again") if again else t("watch.checking", path=path)
    say(out, (f"{time.strftime('%H:%M:%S')}  {what}", "yellow"))
    out.file.flush()


def watch_missing(out: Console, path: str, stopped: bool = False) -> None:
    say(out, (t("watch.gone_stopped" if stopped else "watch.gone", path=path), "yellow"))


def watch_stopped(out: Console) -> None:
    say(out, t("watch.stopped"))


# -- mock --------------------------------------------------------------------------------------------
ENDINGS = {"time": "bold yellow", "quit": "bold", "pass": "bold green"}  # how the coding part ended: its style


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
            say_key(out, "mock.resume_questions", id=(ex.id, "bold cyan"))
            return
        if resumed:
            say_key(out, "mock.resume", id=(ex.id, "bold cyan"), left=clock(session.left()), path=(path, "bold"))
        else:
            why = t("mock.reason", reason=session.reason) if session.reason else ""
            say_key(out, "mock.intro", id=(ex.id, "bold cyan"), title=ex.title, why=why)
            if backup:
                say_key(out, "mock.backed_up", path=(str(backup), "bold"))
            say_key(out, "mock.your_file", path=(path, "bold"))
            say(out, t("mock.fresh"))
        mode = t("mock.strict_mode") if session.strict else t("mock.every_save")
        say(out, t("mock.clock", limit=clock(session.limit_seconds), target=clock(session.target_seconds), mode=mode))
        out.print()
        out.print(render.task(ex, out.width), soft_wrap=True)
        out.print()

    def coding(self, session, ex: "Exercise") -> None:
        keys = t("mock.keys_strict") if session.strict else t("mock.keys")
        say(self.out, (t("mock.keys_label"), "dim"), (keys, "dim"))
        say(self.out, (t("mock.ctrl_c"), "dim"))

    def tick(self, session, left: float) -> None:
        text = t("mock.tick", left=clock(left), checks=session.checks, hints=session.hints)
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
            say(self.out, t("mock.no_more_hints", total=total))
        else:
            which = t("mock.hint_about", about=about, i=shown, n=total) if about else t("report.hint", i=shown, n=total)
            # the one wrapping rule, under the hint's first word; the cost on the last line
            line = render.hanging(which, text + t("mock.hint_cost", cost=HINT_COST), min(self.out.width, 80), "cyan",
                                  "bold")
            self.out.print(line, soft_wrap=True)

    def strict_no_hints(self) -> None:
        self._break()
        say(self.out, (t("mock.strict_no_hints"), "yellow"))

    def strict_no_feedback(self) -> None:
        self._break()
        say(self.out, (t("mock.strict_saved", now=time.strftime('%H:%M:%S')), "dim"))

    def checking(self, session) -> None:
        self._break()
        if self.tty:
            self.out.file.write(t("mock.checking"))
            self.out.file.flush()
            self._line = t("mock.checking")

    def report(self, session, rep: "Report", ex: "Exercise") -> None:
        self._break()
        self.out.rule()
        render.report(self.out, rep, ex)
        self.out.rule()

    def ended(self, session, why: str) -> None:
        self._break()
        text = t(f"mock.ended_{why}") if why in ENDINGS else why
        say(self.out, (text, ENDINGS.get(why, "")), t("mock.used", used=mmss(session.used)))

    def left(self, session) -> None:
        self._break()
        say_key(self.out, "mock.left", command=("attn-drill mock", "bold cyan"))

    def question(self, q: "Question", i: int, n: int) -> None:
        self._break()
        out = self.out
        out.print()
        say(out, (t("mock.follow_up", i=i, n=n), "bold cyan"), f"  ({', '.join(q.concepts)})")
        out.print(render.text(render.phrases(q.question, min(out.width, 80)), "bold"), soft_wrap=True)
        render_explain.choices(out, q.choices)
        self.out.file.write(t("mock.answer_prompt", n=len(q.choices)))
        self.out.file.flush()

    def tracing(self) -> None:
        self._break()
        say(self.out, (t("mock.tracing"), "dim"))

    def explain_question(self, q: dict, i: int, n: int) -> None:
        """A follow-up on the user's own file (explain.py's question)."""
        from attn_drill.render import explain as render_explain

        self._break()
        render_explain.question(self.out, q, i, n, label=t("mock.follow_up_label"))
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
            self.out.file.write(t("mock.from_answers", given='-' if given is None else given) + "\n")
        self.out.file.flush()

    def explain_answered(self, q: dict, given: str | None) -> None:
        from attn_drill.practice import explain
        from attn_drill.render import explain as render_explain

        render_explain.answered(self.out, q, given, explain.is_right(q, given))


    def answered(self, q: "Question", choice: int | None) -> None:
        if q.is_right(choice):
            say(self.out, (t("mock.right"), "bold green"))
        else:
            given = t("mock.no_answer") if choice is None else t("mock.you_said", choice=choice)
            self.out.print(render.hanging(t("mock.not_quite"), t("mock.the_answer", given=given, n=q.answer,
                                                                  choice=q.choices[q.answer - 1]),
                                          min(self.out.width, 80), "bold red"), soft_wrap=True)
        self.out.print(render.hanging(t("mock.why"), q.explanation, min(self.out.width, 80), "dim"), soft_wrap=True)

    def scorecard(self, card: dict, ex: "Exercise") -> None:
        out = self.out
        out.print()
        out.rule(t("mock.scorecard"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        for label, value in scorecard_rows(card, ex):
            grid.add_row(label, value)
        out.print(grid)
        out.rule()


def scorecard_rows(card: dict, ex: "Exercise") -> list[tuple[str, Text]]:
    strict = t("mock.strict_tag") if card.get("strict") else ""
    if card["passed"]:
        verdict = Text.assemble((t("mock.card_passed"), "bold green"))
    else:
        why = ", ".join(map(str, card.get("final_slugs") or [])) or (
            t("mock.never_checked") if not card["checks"] else t("mock.did_not_pass"))
        verdict = Text.assemble((t("mock.card_failed"), "bold red"), text(f": {why}", one_line=True))
    time_used = t("mock.time_used", used=mmss(card['seconds_used']), target=mmss(card['target_seconds']))
    if card.get("limit_seconds") and card["limit_seconds"] != card["target_seconds"]:
        time_used += t("mock.time_limit", limit=mmss(card['limit_seconds']))
    q, mine = card["questions"], card.get("explained") or {}
    mistakes = ", ".join(f"{m['slug']} x{m['count']}" for m in card.get("mistakes", [])) or t("mock.none")
    p = card["points"]
    hints = t("mock.points_hints", hints=-p['hints']) if p["hints"] else ""
    score = Text.assemble((f"{card['score']} / 100", "bold"),
                          t("mock.points", passed=p['pass'], time=p['time'], questions=p['questions'], hints=hints))
    return [
        (t("mock.row_exercise"), Text.assemble((ex.id, "bold cyan"), f"  {ex.title}{strict}")),
        (t("mock.row_correctness"), verdict),
        (t("mock.row_time"), Text(time_used, style="green" if card["seconds_used"] <= card["target_seconds"] else "")),
        (t("mock.row_checks"), Text(str(card["checks"]))),
        (t("mock.row_hints"), Text(str(card["hints"]))),
        *([(t("mock.row_explained"), Text(t("mock.explained", right=mine['right'], total=mine['total'])))]
          if mine.get("total") else []),
        *([(t("mock.row_questions"), Text(t("mock.questions", right=q['right'], total=q['total'])))]
          if q["total"] or not mine.get("total") else []),
        (t("mock.row_mistakes"), text(mistakes, one_line=True)),
        (t("mock.row_score"), score),
    ]


# -- stats -------------------------------------------------------------------------------------------
def stats(out: Console, data: dict) -> None:
    explained = data.get("explain") or {"rounds": 0}
    if not data["exercises"] and not data["mocks"]["count"] and not explained["rounds"]:
        say_key(out, "stats.nothing", start=("attn-drill start sdpa", "bold cyan"),
                check=("attn-drill check", "bold cyan"), mock=("attn-drill mock", "bold cyan"))
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
        trend = mocks["trend"]
        if trend["direction"]:
            say(out, t("stats.trend"), (trend["sparkline"], "cyan"),
                t("stats.trend_words", direction=t(f"stats.{trend['direction']}"), change=f"{trend['change']:+g}"))
    if explained["rounds"]:
        out.print()
        out.print(_explain_table(explained))


def _explain_table(e: dict) -> Group:
    """Which kinds of question about your own code you miss (explain rounds and mocks' follow-ups)."""
    title = t("stats.explain_title_one" if e["rounds"] == 1 else "stats.explain_title", rounds=e["rounds"],
              right=e["right"], total=e["total"])
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold")  # the title above: wider
    for name, justify in ((t("stats.kind"), "left"), (t("stats.asked"), "right"), (t("stats.missed"), "right"),
                          ("", "left")):
        table.add_column(name, justify=justify, no_wrap=True)
    for k in e["kinds"]:
        share = k["missed"] / k["asked"] if k["asked"] else 0
        table.add_row(text(k["kind"], "cyan", one_line=True), str(k["asked"]), str(k["missed"]),
                      Text(t(f"stats.kinds.{k['kind']}") if k["kind"] in KINDS else "",
                           style="red" if share >= 0.5 else "dim"))
    return Group(Text(title, style="italic"), table)


KINDS = ("shape", "breaks", "cost", "concept")  # explain's kinds of question (stats.kinds words them)


def _exercise_table(rows: list[dict]) -> Table:
    table = Table(title=t("stats.by_exercise"), title_justify="left", box=None, padding=(0, 1), pad_edge=False,
                  header_style="bold")
    for name in ("exercise", "attempts", "passed", "checks", "best", "median", "target"):
        table.add_column(t(f"stats.col.{name}"), justify="left" if name == "exercise" else "right", no_wrap=True)
    for r in rows:
        target = r["target_seconds"]
        in_time = r["best_seconds"] is not None and target and r["best_seconds"] <= target
        table.add_row(text(r["id"], "cyan", one_line=True), str(r["attempts"]), str(r["passes"]), str(r["checks"]),
                      Text(duration(r["best_seconds"]), style="green" if in_time else ""),
                      duration(r["median_seconds"]), duration(target))
    return table


def _mistakes(rows: list[dict]) -> Table:
    table = Table(title=t("stats.frequent"), title_justify="left", box=None, padding=(0, 1), pad_edge=False,
                  show_header=False)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for r in rows:
        if r["mistakes"]:
            table.add_row(text(r["id"], "cyan", one_line=True),
                          text(", ".join(f"{m['slug']} x{m['count']}" for m in r["mistakes"]), one_line=True))
    return table


def _mock_table(recent: list[dict], count: int) -> Table:
    title = t("stats.recent_mocks", n=len(recent), count=count) if count > len(recent) else t("stats.mocks")
    table = Table(title=title, title_justify="left", box=None, padding=(0, 1), pad_edge=False, header_style="bold")
    for name, justify in (("date", "left"), ("exercise", "left"), ("score", "right"), ("result", "left"),
                          ("time", "right"), ("questions", "right")):
        table.add_column(t(f"stats.col.{name}"), justify=justify, no_wrap=True)
    for m in recent:
        result = Text(t("list.passed"), style="green") if m["passed"] else Text(t("stats.failed"), style="red")
        if m["strict"]:
            result.append(t("stats.strict"), style="dim")
        table.add_row(m["ended_at"][:16].replace("T", " "), text(m["exercise"], "cyan", one_line=True), str(m["score"]),
                      result, f"{mmss(m['seconds_used'])} / {mmss(m['target_seconds'])}",
                      f"{m['questions_right'] + m.get('explained_right', 0)}/"  # every follow-up, as scored
                      f"{m['questions_total'] + m.get('explained_total', 0)}")
    return table
