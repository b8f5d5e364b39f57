"""Everything the user sees, drawn with rich. The checker returns data; this turns it into text.

All text that comes from a report or a file is put in `Text` objects, never parsed as markup, so a
shape like "[2, 4]" in evidence prints as written, and goes through `text()` (say.printable): what the
user's code raised or printed and the names of files reach the terminal escaped ("\x1b[2J" shows as
those characters; it never clears the screen or forges a coloured PASSED). Colours are a bonus: with
NO_COLOR or a pipe the marks, words and shade characters carry the same information.
"""

from __future__ import annotations

import os

import math
import re
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from attn_drill import i18n
from attn_drill.i18n import t
from attn_drill.say import CLOSING, WIDE_CHARS, pattern, printable, wide, wrap_cells
from attn_drill.report import FAIL, NOT_STARTED, PASS, SKIP, WARN, Finding, Report

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise

MARKS = {PASS: ("✓", "pass", "green"), FAIL: ("✗", "fail", "bold red"),
         WARN: ("!", "warn", "yellow"), SKIP: ("-", "skipped", "dim")}
SHADES = " ░▒▓█"
HEATMAP_MAX = 12  # rows/cols drawn; more would not fit two side by side in 80 columns


def text(value: object, style: str = "", *, one_line: bool = False) -> Text:
    """Text from outside (a report, a file name, a history row) as shown, never acted on by the terminal."""
    return Text(printable(value, multiline=not one_line), style=style)


# -- a report --------------------------------------------------------------------------------------
def report(console: Console, rep: Report, ex: "Exercise | None" = None, verbose: bool = False) -> None:
    """The named mistakes first (slug, title, your line, evidence, fix, why), then what your code printed,
    the stages (one line of marks and the detail of a stage that failed or warned; every stage's detail
    with `verbose`), the file and seed, and the verdict."""
    rep.sort_findings()
    seen: set = set()  # the glossary terms this report has used (i18n.gloss: the first gets its English)
    for i, f in enumerate(rep.findings):
        if i:
            console.print()
        console.print(finding(f, _source_line(rep.file, f.line), width=console.width, seen=seen))
        if f.picture:
            pic = picture(f.picture)
            if pic is not None:
                console.print(pic)
    if rep.output:
        console.print()
        console.print(printed(rep.output))
    if rep.findings or rep.output:
        console.print()
    if verbose:
        console.print(_stages_table(rep, console.width))
    console.print(_footer(rep, _labelled() if verbose else _stages(rep, console.width)))
    console.print(verdict(rep))


def printed(output: str) -> Group:
    """What the user's code printed (the checker keeps its first and last lines), as plain text."""
    return Group(Text(t("report.printed"), style="dim"), _indent(text(output, style="dim")))


def _labelled() -> Table:
    """Two columns: a dim label, and a value wrapped between words under itself."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


def _footer(rep: Report, grid: Table) -> Table:
    """The file, the seed and any sandbox wall missing, added to `grid` (the stages' lines, aligned)."""
    grid.add_row(t("report.file"), text(rep.file, one_line=True))
    grid.add_row(t("report.seed"), Text(t("report.replay", seed=rep.seed)))
    if rep.confinement:  # a wall of the sandbox this machine could not put up: say which, once
        grid.add_row(t("report.sandbox"), text(t("report.not_confined", what=rep.confinement), "yellow"))
    return grid


def _mark(status: str) -> tuple[str, str, str]:
    mark, word, style = MARKS.get(status, ("?", status, ""))
    return mark, (t(f"report.marks.{status}") if status in MARKS else word), style


def detail(words: str) -> str:
    """A stage's detail as shown: the not-started mark (report.NOT_STARTED, which Report.not_started reads, so it
    stays English in the report) in the language in use."""
    if words.startswith(NOT_STARTED):
        return t("report.not_started_detail") + words[len(NOT_STARTED):]
    return words


def stage_name(name: str) -> str:
    """A stage's name as the report shows it (in Chinese under zh; --json keeps report.STAGES' names)."""
    try:
        return t(f"report.stage.{name}")
    except KeyError:
        return name


def _stages(rep: Report, width: int = 80) -> Table:
    """One line of marks (fits 80 columns: ✓ load  ✓ api ... - device), then the detail of each stage that
    failed or warned, under its name."""
    line = Text()
    for s in rep.stages:
        mark, _, style = _mark(s.status)
        line.append_text(Text.assemble((f"{mark} ", style), text(stage_name(s.name), one_line=True)))
        line.append("  ")
    line.rstrip()
    grid = _labelled()
    grid.add_row(t("report.stages"), line)
    shown = [s for s in rep.stages if s.status in (FAIL, WARN) and s.detail]
    from rich.cells import cell_len

    label = max([cell_len(t(f"report.{k}")) for k in ("sandbox", "stages", "file", "seed")]
                + [cell_len(stage_name(s.name)) for s in shown])  # the footer's labels share the column
    for s in shown:
        grid.add_row(text(stage_name(s.name), one_line=True), text(phrases(detail(s.detail), width - label - 2)))
    return grid


def _stages_table(rep: Report, width: int = 80) -> Table:
    """Every stage on its own row: its mark and word, its name, its detail (check -v)."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for s in rep.stages:
        mark, word, style = _mark(s.status)
        grid.add_row(text(f"{mark} {word}", style, one_line=True), text(stage_name(s.name), "bold", one_line=True),
                     text(phrases(detail(s.detail), width - 22), "dim" if s.status == SKIP else ""))
    return grid


NBSP = "\u00a0"
# An operand of a formula: a name or number, maybe called or indexed once: d_model, q.size(-1), m[..., None]
_OPERAND = r"-?[\w.]+(?:\([^()\n]{0,30}\))?(?:\[[^\[\]\n]{0,20}\])?"
# A phrase that must stay on one line (the one wrapping rule of every screen): a code span in backticks; a tuple
# with its short name, "mask (2, 1, 5, 6)", or a bracketed place, "(batch 0, head 1, ...)"; a run of sizes,
# "B=2 H=3 Tq=5"; a formula, "B == H", "d = d_model // num_heads", "l * exp(m_old - m_new)", "H x d".
_PHRASE = re.compile(
    r"`[^`\n]{1,60}`"
    r"|(?:\b\w{1,5} )?\([^()\n]{0,40}\)|\[[^\[\]\n]{0,40}\]|\w+=\S+(?: \w+=\S+)+"
    rf"|{_OPERAND}(?: (?:==|!=|<=|>=|//|\*\*|[=<>*/+@x-]) {_OPERAND})+")


def phrases(value: str, width: int, hang: str = "") -> str:
    """`value` wrapped between words to `width`, never inside a phrase (_PHRASE): rich would wrap at any
    space. Its own line breaks and their indents are kept; `hang` indents a wrapped line's continuation more.
    Chinese wraps between characters too (each takes two columns), never before a closing mark (，。)."""
    import textwrap

    glued = _PHRASE.sub(lambda m: m.group().replace(" ", NBSP) if len(m.group()) <= 50 else m.group(), str(value))
    lines = []
    for line in glued.split("\n"):  # textwrap breaks only at ASCII whitespace: NBSP holds a phrase together
        lead = line[:len(line) - len(line.lstrip(" "))]
        if wide().search(line):
            lines.append(_wrap_cells(line, max(20, width), lead + hang))
            continue
        lines.append(textwrap.fill(line, max(20, width), initial_indent="", subsequent_indent=lead + hang,
                                   break_long_words=False, break_on_hyphens=False) or line)
    return "\n".join(lines).replace(NBSP, " ")


def _wrap_cells(line: str, width: int, indent: str) -> str:
    """say.wrap_cells measured as rich measures (cell_len), a glued phrase's NBSP kept off a line's start."""
    from rich.cells import cell_len

    return wrap_cells(line, width, indent, measure=cell_len, blanks=" " + NBSP)


def hanging(label: str, body: str, width: int = 80, label_style: str = "", body_style: str = "") -> Text:
    """`label`, then `body` wrapped by the one rule (phrases) in the width left, its continuation lines under
    the body's first character: a hint after "hint 1/3", a choice after "2)", a reason after "why:"."""
    from rich.cells import cell_len

    lines = phrases(body, max(20, width - cell_len(label))).split("\n")
    pad = " " * cell_len(label)
    return Text.assemble((label, label_style), text("\n".join([lines[0]] + [pad + line for line in lines[1:]]),
                                                    body_style))


def _source_line(file: str, line: int | None) -> str:
    """The text of the user's line, to show beside its number ("" when it cannot be read)."""
    if not line:
        return ""
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            for n, source in enumerate(f, 1):
                if n == line:
                    return source.strip()[:200]
    except (OSError, ValueError):
        pass
    return ""


def finding(f: Finding, source: str = "", width: int = 80, seen: set | None = None) -> Group:
    """slug and title on the first line, then your line, the evidence, the fix and why; in Chinese a glossary
    term's first use in the report (`seen`) gets its English."""
    seen = set() if seen is None else seen
    error = f.level == "error"
    from rich.cells import cell_len

    label = t("report.error") if error else t("report.warning")
    before = cell_len(f"{label}  {printable(f.slug, multiline=False)}  ")
    title = printable(i18n.gloss(f.title, seen), multiline=False)
    if before + cell_len(title) > width:  # wrapped by the one rule, under the title's first character
        title = phrases(title, max(20, width - before)).replace("\n", "\n" + " " * before)
    head = Text.assemble((label, "bold red" if error else "bold yellow"), "  ", text(f.slug, "bold", one_line=True),
                         "  ", Text(title))
    grid = _labelled()
    labels = [t("report.your_line")] if f.line else []
    labels += [t(f"report.{k}") for k, v in (("evidence", f.evidence), ("fix", f.fix), ("why", f.message)) if v]
    inner = width - 2 - 2 - max(map(cell_len, labels or ["fix"]))  # the indent, the label column, its padding
    if f.line:
        grid.add_row(t("report.your_line"), Text.assemble((str(f.line), "bold magenta"),
                                                text(f"  {source}" if source else "", one_line=True)))
    for label, value in (("evidence", f.evidence), ("fix", f.fix), ("why", f.message)):
        if value:
            value = i18n.gloss(value, seen)
            grid.add_row(t(f"report.{label}"), text(phrases(value, inner), "green" if label == "fix" else ""))
    return Group(head, _indent(grid, 2))


def _indent(renderable, left: int = 4):
    from rich.padding import Padding

    return Padding(renderable, (0, 0, 0, left))


def verdict(rep: Report) -> Text:
    n_err = len(rep.errors)
    n_warn = len(rep.findings) - n_err
    counts = t("report.counts", errors=t("report.one_error") if n_err == 1 else t("report.errors", n=n_err),
               warnings=t("report.one_warning") if n_warn == 1 else t("report.warnings", n=n_warn))
    seconds = f"{rep.seconds:.1f}" if rep.seconds >= 0.1 else (f"{rep.seconds:.2f}" if rep.seconds else "")
    took = t("report.took", seconds=seconds) if seconds else ""
    if rep.passed:
        return Text.assemble((t("report.passed"), "bold green"), printable(f"  {rep.exercise}  {counts}{took}"))
    if rep.not_started:
        return Text.assemble((t("report.not_started"), "bold yellow"),
                             printable(f"  {rep.exercise}  {t('report.fill_todos')}{took}"))
    return Text.assemble((t("report.failed"), "bold red"), printable(f"  {rep.exercise}  {counts}{took}"))


# -- attention heatmaps ----------------------------------------------------------------------------
def shade(v) -> str:
    """One cell's character: blank for exactly 0 (a hidden key), four steps up to 1, '?' for NaN
    (the worker sends NaN as -1)."""
    if not isinstance(v, (int, float)) or math.isnan(v) or math.isinf(v) or v < 0:
        return "?"
    if v <= 1e-6:
        return SHADES[0]
    return SHADES[1 + min(3, int(v * 4))]


def _matrix(m) -> list[list]:
    if not isinstance(m, list) or not m or not all(isinstance(r, list) for r in m):
        return []
    return m


def heatmap(title: str, m: list[list], other: list[list] | None = None) -> Text:
    """Rows = queries, columns = keys; a cell that differs from `other` by > 0.05 is drawn red."""
    rows, cols = len(m), max(len(r) for r in m)
    text = Text.assemble((title + "\n", "bold"))
    keys = "".join(f"{j % 10:<2d}" for j in range(min(cols, HEATMAP_MAX)))  # key index, mod 10
    text.append(f"k     {keys}\n", style="dim")
    for i, row in enumerate(m[:HEATMAP_MAX]):
        text.append(f"q{i:<3d} │", style="dim")
        for j, v in enumerate(row[:HEATMAP_MAX]):
            ref = other[i][j] if other and i < len(other) and j < len(other[i]) else None
            bad = isinstance(ref, (int, float)) and isinstance(v, (int, float)) and not abs(v - ref) <= 0.05
            text.append(shade(v) * 2, style="red" if bad else "cyan")
        text.append("│\n", style="dim")
    if rows > HEATMAP_MAX or cols > HEATMAP_MAX:
        text.append(t("report.clipped", rows=min(rows, HEATMAP_MAX), all_rows=rows, cols=min(cols, HEATMAP_MAX),
                      all_cols=cols), style="dim")
    text.rstrip()
    return text


def picture(pic: dict):
    """Side-by-side heatmaps of the user's and the expected weights; None if the data is unusable."""
    yours, expected = _matrix(pic.get("yours")), _matrix(pic.get("expected"))
    if not yours or not expected:
        return None
    title = pic.get("title") or pic.get("case") or t("report.weights")
    grid = Table.grid(padding=(0, 4))
    grid.add_row(heatmap(t("report.yours"), yours, expected), heatmap(t("report.expected"), expected))
    axes = "" if "quer" in str(title) or "查询" in str(title) else t("report.axes")  # the title names them
    legend = Text(axes + t("report.legend", shades=SHADES[1:]), style="dim")
    parts = [text(title, "bold"), grid, legend]
    if pic.get("caption"):
        parts.append(text(pic["caption"], "italic"))
    return _indent(Group(*parts))


# -- start, hint, solution -------------------------------------------------------------------------
def task(ex: "Exercise", width: int = 80) -> Text:
    """The task as written in the catalogue, each line wrapped between words to `width`, its continuation
    indented under the line's own indent (print it with soft_wrap=True: it is wrapped already)."""
    lines = [phrases(line, width, hang="  ") if line.strip() else line for line in ex.task.splitlines()]
    from rich.cells import cell_len

    target = t("report.target", minutes=ex.minutes, difficulty=t(f"difficulty.{ex.difficulty}"))
    apart = "   " if cell_len(f"{ex.id}  {ex.title}   {target}") <= width else "\n"
    return Text.assemble((ex.id, "bold cyan"), "  ", (ex.title, "bold"), f"{apart}{target}\n\n", "\n".join(lines))


def hints(ex: "Exercise", shown: int, fresh: int | None, mistake=None, width: int = 80) -> Group:
    """Hints 1..shown; `fresh` (1-based) is the one this call revealed. `mistake` (hints.Shown): the hints of the
    mistake the last check named, seen so far, shown first."""
    lines = []
    if mistake is not None and mistake.slug and mistake.mistake:
        new = mistake.fresh[1] if mistake.fresh and mistake.fresh[0] == "mistake" else None
        for i, h in enumerate(mistake.mistake, 1):
            style = "bold" if i == new else ("" if mistake.fresh is None else "dim")
            label = f"{mistake.slug} {i}/{mistake.mistake_total}  "
            lines.append(hanging(label, h, width, "magenta", style))
    for i, h in enumerate(ex.hints[:shown], 1):
        style = "bold" if i == fresh else ("" if fresh is None else "dim")
        lines.append(hanging(t("report.hint", i=i, n=len(ex.hints)), h, width, "cyan", style))
    return Group(*lines)


def solution(ex: "Exercise") -> object:
    from rich.syntax import Syntax  # pygments is slow to import: only here

    code = ex.reference.read_text(encoding="utf-8")
    return Syntax(code, "python", line_numbers=True, word_wrap=True, theme="ansi_dark")


# -- messages --------------------------------------------------------------------------------------
def plain(rep: Report, ex: "Exercise | None" = None, width: int = 100) -> str:
    """The report as plain text (no colour, no trailing spaces): for JUnit XML and a notebook's str()."""
    import io

    buffer = io.StringIO()
    report(Console(file=buffer, width=width, color_system=None, highlight=False, emoji=False, force_jupyter=False),
           rep, ex)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def recording(width: int = 100) -> Console:
    """A console that draws in colour into memory, for `html()` (a notebook), never into Jupyter's own display."""
    import io

    return Console(file=io.StringIO(), width=width, record=True, highlight=False, emoji=False,
                   color_system="truecolor", force_terminal=True, force_jupyter=False)


def html(recorded: Console) -> str:
    """What a `recording()` console drew, as HTML with inline styles."""
    return recorded.export_html(inline_styles=True, code_format='<pre style="{stylesheet}">{code}</pre>')


def console(stderr: bool = False) -> Console:
    """The console every screen draws on: no line ends in spaces (rich pads table cells to the width)."""
    import sys

    return Console(file=_NoTrailingSpaces(sys.stderr if stderr else sys.stdout), stderr=stderr, highlight=False,
                   emoji=False)


class _NoTrailingSpaces:
    """A text stream whose lines lose their trailing spaces (before any closing colour code) on the way out;
    a write without a newline (a prompt) goes out as it is."""

    _END = re.compile(r" +((?:\x1b\[[0-9;]*m)*)\n")

    def __init__(self, stream):
        self._stream = stream

    def write(self, data: str) -> int:
        self._stream.write(self._END.sub(r"\1\n", data))
        return len(data)

    def __getattr__(self, name):  # isatty, fileno, flush, encoding...: the stream's own
        return getattr(self._stream, name)


def say(out: Console, *parts) -> None:
    """One message; paths and commands (the styled parts) are never broken, so they stay copy-pasteable. A message
    wider than the console breaks between the words of its plain parts. parts: str or (str, style), escaped (they
    carry file names and values the user typed)."""
    safe = [(printable(p[0], multiline=True), p[1]) if isinstance(p, tuple) else printable(p, multiline=True)
            for p in parts]
    text = Text.assemble(*safe)
    # a pipe or a log keeps a message on one line, and so does an error (one line, whatever the width)
    folds = (out.is_terminal or "COLUMNS" in os.environ) and not out.stderr
    if folds and "\n" not in text.plain and text.cell_len > out.width:  # cells: a Chinese character takes two
        text = Text.assemble(*_fold(safe, out.width))
    out.print(text, soft_wrap=True)


def _fold(parts: list, width: int) -> list:
    """parts with the spaces between words of plain parts turned into line breaks where a line would pass width."""
    words = []  # (text, style): each styled part whole, each plain word with the space after it
    for p in parts:
        if isinstance(p, tuple):
            words.append(p)
        else:  # a word with the space after it; a Chinese character on its own (a line may break after it)
            words += [(w, "") for w in pattern(_WORDS).findall(p)]
    from rich.cells import cell_len

    out, used = [], 0
    for text, style in words:
        wide_break = bool(out) and bool(wide().match(text) or wide().search(out[-1][0][-1:]))
        if used and used + cell_len(text.rstrip()) > width and text[:1] in CLOSING and len(out) > 1 and (
                out[-2][0].endswith(" ") or wide().search(out[-2][0][-1:]) or wide().match(out[-1][0])):
            # a closing mark (。) never starts a line: the word before it goes down with it
            before = out.pop()
            out[-1] = (out[-1][0].rstrip(" "), out[-1][1])
            out += [("\n", ""), before, (text, style)]
            used = cell_len(before[0]) + cell_len(text)
            continue
        if used and used + cell_len(text.rstrip()) > width and out and (out[-1][0].endswith(" ") or wide_break):
            out[-1] = (out[-1][0].rstrip(" "), out[-1][1])
            out.append(("\n", ""))
            used = 0
        out.append((text, style))
        used += cell_len(text)
    return out


_WORDS = f"[^ {WIDE_CHARS}]+[{CLOSING}]* ?|[{WIDE_CHARS}][{CLOSING}]* ?| +"


def say_key(out: Console, key: str, **params) -> None:
    """say() the screen string `key` (i18n's ui catalogue), its {names} filled from params; a (text, style) value
    is a styled part (a path or a command), kept whole as say keeps it."""
    parts = []
    for piece in re.split(r"(\{\w+\})", t(key)):
        name = piece[1:-1] if piece.startswith("{") and piece.endswith("}") else None
        value = params.get(name) if name else None
        if name and name in params:
            parts.append(value if isinstance(value, tuple) else str(value))
        elif piece:
            parts.append(piece)
    say(out, *parts)


def solved(out: Console, ex: "Exercise", took: float | None, best: float | None, after: list[str] = ()) -> None:
    """After a pass (check and watch alike): the solve time of the started file against the target and the best
    so far, then `after` (moveon.after_pass: progress, what is next and its command). One line, wrapped between
    its segments, so a command is never cut."""
    from attn_drill.render.listing import duration
    from attn_drill.practice.moveon import wrap

    first = ([t("report.solved", took=duration(took)), t("report.solved_target", minutes=ex.minutes, best=duration(best))]
             if took is not None else [])
    for line in wrap(first + list(after), min(out.width, 80)):
        say(out, line)
