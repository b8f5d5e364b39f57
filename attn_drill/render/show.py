"""`attn-drill show` in the terminal: every head's weights, the user's beside the reference's, drawn with rich.

A head is a block of lines: its number, the two maps side by side (rows = queries, two characters per key, shaded
blank ░ ▒ ▓ █ from 0 to 1), each query's strongest key at the end of its row, then the head's entropy and what
differs. Blocks go several to a line where they fit (80 columns at most). Without colour the marks still say it:
`*` after a strongest key that differs, and the count of weights that differ.
"""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attn_drill.practice.show import DIFF, Head, heads
from attn_drill.render.report import say, shade, text

WIDTH = 80  # never wider, whatever the terminal
GAP = 2  # spaces between two head blocks, and between yours and the reference's
LABEL = 5  # the query column: "  q0 "


def show(out: Console, result: dict, ex_id: str, path: str, seed: int) -> None:
    width = min(out.width, WIDTH)
    out.print(_header(result, ex_id, path, seed))
    groups = [(item, heads(item)) for item in result.get("maps") or []]
    for item, hs in groups:
        out.print()
        if len(groups) > 1 or item.get("name") != "weights":
            out.print(text(item.get("name", ""), "bold cyan", one_line=True))
        for line in _rows_of_blocks([_block(h) for h in hs], width):
            out.print(line, no_wrap=True, overflow="ignore")
        if item.get("note"):
            out.print(text(item["note"], "yellow"))
    out.print()
    out.print(_summary(groups))


def _header(result: dict, ex_id: str, path: str, seed: int) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("show", Text.assemble((ex_id, "bold cyan"), "  ", text(path, one_line=True)))
    grid.add_row("example", text(f"{result.get('case', '')}; batch {result.get('batch', 0)}, seed {seed}"))
    grid.add_row("weights", text(f"{result.get('how', '')}; rows = queries, columns = keys"))
    grid.add_row("shades", Text(f"blank = 0 (a hidden key), ░ ▒ ▓ █ up to 1, ? = NaN; top = each query's "
                                f"strongest key; entropy in bits, the mean over the queries; * and red = differs "
                                f"from the reference (by > {DIFF:g})" + SINK_SAID * _has_sink(result)))
    return grid


SINK_SAID = "; sink takes = each query's share left to the sink, 1 - its row's sum"


def _has_sink(result: dict) -> bool:
    return any(h.rest is not None for item in result.get("maps") or [] for h in heads(item))


def _map_width(keys: int) -> int:
    return 2 * keys + 4  # two characters a key, then " top": a space, the key (2), a mark


def _block(h: Head) -> list[Text]:
    """The lines of one head, all of the block's width."""
    keys = len(h.reference[0]) if h.reference else 0
    mw = _map_width(keys)
    width = LABEL + mw + GAP + mw
    lines = [Text(f"head {h.index}", style="bold"),
             Text(" " * LABEL + "yours".ljust(mw + GAP) + "reference", style="dim"),
             Text(" " * LABEL + (_axis(keys) + " top").ljust(mw + GAP) + _axis(keys) + " top", style="dim")]
    tops_y, tops_r = _tops(h.yours), _tops(h.reference)
    for i, ref_row in enumerate(h.reference):
        line = Text(f"{'q' + str(i):>{LABEL - 1}} ", style="dim")
        if h.yours is not None:
            line.append_text(_cells(h.yours[i], {j for q, j in h.cells if q == i}))
            line.append(f" {tops_y[i]:>2}")
            line.append("*" if i in h.tops else " ", style="bold red")
        else:
            line.append(("(none)" if i == 0 else "").ljust(mw), style="dim")
        line.append(" " * GAP)
        line.append_text(_cells(ref_row, set()))
        line.append(f" {tops_r[i]:>2} ")
        lines.append(line)
    lines += [Text(s, style=style) for s, style in _verdict(h, width)]
    return [_pad(line, width) for line in lines]


def _axis(keys: int) -> str:
    return "".join(f"{j % 10:<2d}" for j in range(keys))


def _tops(m) -> list[str]:
    from attn_drill.practice.show import strongest

    return ["-" if t is None else str(t) for t in strongest(m)] if m is not None else []


def _cells(row: list, bad: set) -> Text:
    t = Text()
    for j, v in enumerate(row):
        t.append(shade(-1 if v is None else v) * 2, style="bold red" if j in bad else "cyan")
    return t


def _verdict(h: Head, width: int) -> list[tuple[str, str]]:
    """The head's entropy and what differs, wrapped to the block's width."""
    y, r = h.entropies
    ent = "entropy " + ("-" if y is None else f"{y:.2f}") + ("*" if h.entropy_differs else "") + \
        " (reference " + ("-" if r is None else f"{r:.2f}") + ")"
    if h.yours is None:
        what, style = "no weights of yours to compare", "yellow"
    elif h.same:
        what, style = "✓ same as the reference", "green"
    else:
        parts = []
        if h.cells:
            parts.append(f"{len(h.cells)} of {h.size} weights differ")
        if h.tops:
            parts.append("top key differs at " + " ".join(f"q{i}" for i in h.tops))
        what, style = "✗ " + "; ".join(parts), "red"
    out = [(line, "") for line in textwrap.wrap(ent, width - 2, initial_indent="  ", subsequent_indent="  ")]
    if h.rest is not None:  # a sink: the share of each query's row it takes (1 - the row's sum), q0 first
        def said(xs):
            return " ".join("  -" if x is None else f"{x:.2f}".removeprefix("0") for x in xs)
        mine, theirs = h.rest
        if mine is None or all(a is not None and b is not None and abs(a - b) <= DIFF for a, b in zip(mine, theirs)):
            out.append((f"  sink takes {said(theirs)}", ""))
        else:
            out += [(f"  sink takes {said(mine)} (yours)", "red"), (f"             {said(theirs)} (reference)", "")]
    return out + [(line, style) for line in textwrap.wrap(what, width - 2, initial_indent="  ",
                                                          subsequent_indent="    ")]


def _pad(line: Text, width: int) -> Text:
    line.pad_right(max(0, width - line.cell_len))
    return line


def _rows_of_blocks(blocks: list[list[Text]], width: int) -> list[Text]:
    """Blocks side by side, as many as fit the width (at least one), then the next ones below a blank line."""
    if not blocks:
        return []
    bw = max(line.cell_len for b in blocks for line in b)
    per_row = max(1, (width + GAP) // (bw + GAP))
    out: list[Text] = []
    for start in range(0, len(blocks), per_row):
        row = blocks[start:start + per_row]
        height = max(len(b) for b in row)
        if out:
            out.append(Text(""))
        for i in range(height):
            line = Text()
            for k, b in enumerate(row):
                if k:
                    line.append(" " * GAP)
                line.append_text(b[i] if i < len(b) else Text(" " * bw))
            line.rstrip()
            out.append(line)
    return out


def _summary(groups: list) -> Text:
    """One closing line: the heads that differ, by sub-layer."""
    bad, total = [], 0
    for item, hs in groups:
        total += len(hs)
        names = [str(h.index) for h in hs if not h.same]
        if names:
            where = "" if item.get("name") == "weights" else f" of {item.get('name')}"
            bad.append(f"{'head' if len(names) == 1 else 'heads'} {', '.join(names)}{where}")
    if not bad:
        every = "both heads" if total == 2 else "its one head" if total == 1 else f"all {total} heads"
        return Text(f"Yours matches the reference on {every}.", style="bold green")
    return Text.assemble(("Yours differs: ", "bold red"), text("; ".join(bad)),
                         ". attn-drill check names the mistake.")


def verdict(out: Console, slug: str, title: str, evidence: str, line) -> None:
    """Why nothing could be drawn: the finding's slug and title, its evidence's first line, the user's line."""
    first = (evidence or "").strip().splitlines()
    detail = first[0] if first else ""
    if len(detail) > 160:
        detail = detail[:157] + "..."
    where = f" (your line {line})" if line else ""
    out.print(Text.assemble(("✗ ", "bold red"), text(slug, "bold", one_line=True), "  ",
                            text(f"{title}: {detail}{where}" if detail else f"{title}{where}", one_line=True)))
    say(out, "Nothing to draw; ", ("attn-drill check", "bold cyan"), " gives the full report.")
