"""`attn-drill show` in the terminal: every head's weights, the user's beside the reference's, drawn with rich.

A head is a block of lines: its number, the two maps side by side (rows = queries, two characters per key, shaded
blank ░ ▒ ▓ █ from 0 to 1), each query's strongest key at the end of its row, then the head's entropy and what
differs. Blocks go several to a line where they fit (80 columns at most). Without colour the marks still say it:
`*` after a strongest key that differs, and the count of weights that differ.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attn_drill.practice.show import DIFF, Head, heads
from attn_drill.i18n import t
from attn_drill.render.report import say_key, shade, text
from attn_drill.say import cells, fill

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
    grid.add_row(t("show.show"), Text.assemble((ex_id, "bold cyan"), "  ", text(path, one_line=True)))
    grid.add_row(t("show.example"), text(t("show.example_is", case=result.get('case', ''), batch=result.get('batch', 0),
                                           seed=seed)))
    grid.add_row(t("show.weights"), text(t("show.weights_are", how=result.get('how', ''))))
    grid.add_row(t("show.shades"), Text(t("show.legend", diff=f"{DIFF:g}") + t("show.sink_said") * _has_sink(result)))
    return grid


def _has_sink(result: dict) -> bool:
    return any(h.rest is not None for item in result.get("maps") or [] for h in heads(item))


def _map_width(keys: int) -> int:
    return 2 * keys + 4  # two characters a key, then " top": a space, the key (2), a mark


def _block(h: Head) -> list[Text]:
    """The lines of one head, all of the block's width."""
    keys = len(h.reference[0]) if h.reference else 0
    mw = _map_width(keys)
    width = LABEL + mw + GAP + mw
    yours, top = t("show.yours"), t("show.top")
    lines = [Text(t("show.head", i=h.index), style="bold"),
             Text(" " * LABEL + yours + " " * max(1, mw + GAP - cells(yours)) + t("show.reference"), style="dim"),
             Text(" " * LABEL + (_axis(keys) + " " + top).ljust(mw + GAP) + _axis(keys) + " " + top, style="dim")]
    tops_y, tops_r = _tops(h.yours), _tops(h.reference)
    for i, ref_row in enumerate(h.reference):
        line = Text(f"{'q' + str(i):>{LABEL - 1}} ", style="dim")
        if h.yours is not None:
            line.append_text(_cells(h.yours[i], {j for q, j in h.cells if q == i}))
            line.append(f" {tops_y[i]:>2}")
            line.append("*" if i in h.tops else " ", style="bold red")
        else:
            none = t("show.none") if i == 0 else ""
            line.append(none + " " * max(0, mw - cells(none)), style="dim")
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
    ent = t("show.entropy", yours="-" if y is None else f"{y:.2f}", mark="*" if h.entropy_differs else "",
            reference="-" if r is None else f"{r:.2f}")
    if h.yours is None:
        what, style = t("show.no_weights"), "yellow"
    elif h.same:
        what, style = t("show.same"), "green"
    else:
        parts = []
        if h.cells:
            parts.append(t("show.differ", n=len(h.cells), size=h.size))
        if h.tops:
            parts.append(t("show.top_differs", at=" ".join(f"q{i}" for i in h.tops)))
        what, style = "✗ " + t("show.and").join(parts), "red"
    out = [(line, "") for line in _wrap(ent, width - 2, "  ", "  ")]
    if h.rest is not None:  # a sink: the share of each query's row it takes (1 - the row's sum), q0 first
        def said(xs):
            return " ".join("  -" if x is None else f"{x:.2f}".removeprefix("0") for x in xs)
        mine, theirs = h.rest
        if mine is None or all(a is not None and b is not None and abs(a - b) <= DIFF for a, b in zip(mine, theirs)):
            out.append((t("show.sink_takes", shares=said(theirs)), ""))
        else:
            takes = t("show.sink_takes", shares=said(mine))
            out += [(takes + t("show.sink_yours"), "red"),
                    (" " * (cells(takes) - len(said(theirs))) + said(theirs) + t("show.sink_reference"), "")]
    return out + [(line, style) for line in _wrap(what, width - 2, "  ", "    ")]


def _wrap(words: str, width: int, first: str, rest: str) -> list[str]:
    """textwrap.wrap's lines; with Chinese in them, wrapped between characters too (two columns each)."""
    import textwrap

    if cells(words) == len(words):
        return textwrap.wrap(words, width, initial_indent=first, subsequent_indent=rest)
    lines = fill(words, width - len(rest)).split("\n")
    return [first + lines[0]] + [rest + line for line in lines[1:]]


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
            where = "" if item.get("name") == "weights" else t("show.of", name=item.get('name'))
            bad.append(t("show.heads_one" if len(names) == 1 else "show.heads", names=", ".join(names), where=where))
    if not bad:
        every = t("show.both") if total == 2 else t("show.one") if total == 1 else t("show.all", n=total)
        return Text(t("show.matches", every=every), style="bold green")
    return Text.assemble((t("show.differs"), "bold red"), text(t("show.and").join(bad)), t("show.check_names"))


def verdict(out: Console, slug: str, title: str, evidence: str, line) -> None:
    """Why nothing could be drawn: the finding's slug and title, its evidence's first line, the user's line."""
    first = (evidence or "").strip().splitlines()
    detail = first[0] if first else ""
    if len(detail) > 160:
        detail = detail[:157] + "..."
    where = t("show.your_line", line=line) if line else ""
    out.print(Text.assemble(("✗ ", "bold red"), text(slug, "bold", one_line=True), "  ",
                            text(f"{title}: {detail}{where}" if detail else f"{title}{where}", one_line=True)))
    say_key(out, "show.nothing", command=("attn-drill check", "bold cyan"))
