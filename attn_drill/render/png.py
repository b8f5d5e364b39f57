"""`attn-drill show --png FILE`: the same maps as an image, with matplotlib (an optional extra: attn-drill[plot]).

Imported only for --png. One row per head, and for each map (each attention sub-layer) two columns, yours then
the reference's (a single map's heads go two to a row), on one colour scale from 0 to 1 with its colour bar.
Each query's strongest key is ringed; where yours differs from the reference's, the weight is boxed in red and
a differing strongest key is crossed. Small maps carry each weight's number.
No pyplot: a bare Figure, so no GUI backend and no global state.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from attn_drill.practice.show import DIFF, heads, strongest

CELL = 0.42  # inches per query or key
NUMBERS = 12  # maps up to this many queries and keys show each weight's number
RING, CROSS, BOX = "white", "red", "red"


def write(path: Path, result: dict, title: str) -> None:
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    groups = [(item, heads(item)) for item in result.get("maps") or []]
    slots = _slots(groups)
    rows = max((r for r, _ in slots.values()), default=0) + 1
    cols = 2 * (max((c for _, c in slots.values()), default=0) + 1)
    Tq = max((len(h.reference) for _, hs in groups for h in hs), default=1)
    Tk = max((len(h.reference[0]) for _, hs in groups for h in hs if h.reference), default=1)
    panel = (max(2.3, CELL * Tk + 0.9), max(2.0, CELL * Tq + 0.9))
    fig = Figure(figsize=(panel[0] * cols + 1.2, panel[1] * rows + 1.5), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat:
        ax.set_axis_off()  # turned back on for each panel drawn
    image = None
    for g, (item, hs) in enumerate(groups):
        name = "" if item.get("name") == "weights" and len(groups) == 1 else f"{item.get('name')}: "
        for h in hs:
            r, c = slots[g, h.index]
            for side, m in enumerate((h.yours, h.reference)):
                ax = axes[r][2 * c + side]
                e = h.entropies[side]
                ax.set_title(f"{name}{'yours' if side == 0 else 'reference'}, head {h.index}\n"
                             f"entropy {'-' if e is None else f'{e:.2f}'} bits",
                             fontsize=9, color="firebrick" if side == 0 and not h.same else "black")
                if m is None:
                    ax.text(0.5, 0.5, "no weights", ha="center", va="center", transform=ax.transAxes)
                    continue
                ax.set_axis_on()
                image = _panel(ax, m, h if side == 0 else None, Rectangle)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8 if rows > 1 else 1.0, aspect=25, label="attention weight")
    case = textwrap.fill(f"{result.get('case', '')}; batch {result.get('batch', 0)}", 100)
    fig.suptitle(f"{title}\n{case}", fontsize=10)
    fig.supxlabel(f"rows = queries, columns = keys.  ring: each query's strongest key.  red box: yours differs "
                  f"by > {DIFF:g};  red x: a strongest key that differs.", fontsize=8)
    fig.savefig(path, format="png", dpi=110)


def _slots(groups: list) -> dict:
    """(group, head) -> (row, pair of columns): one row per head with a pair of columns per sub-layer; a single
    map of more than two heads goes two heads to a row, so the image is not a tall strip."""
    if len(groups) == 1 and len(groups[0][1]) > 2:
        return {(0, h.index): divmod(h.index, 2) for h in groups[0][1]}
    return {(g, h.index): (h.index, g) for g, (_, hs) in enumerate(groups) for h in hs}


def _panel(ax, m: list[list], head, Rectangle):
    """One map: the weights (NaN grey), the strongest key of each query, and (for yours) what differs."""
    data = [[float("nan") if v is None else v for v in row] for row in m]
    import matplotlib

    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="lightgrey")  # NaN shows grey
    image = ax.imshow(data, vmin=0.0, vmax=1.0, cmap=cmap, interpolation="nearest")
    tops = strongest(m)
    for i, j in enumerate(tops):
        if j is not None:
            wrong = head is not None and i in head.tops
            ax.plot(j, i, marker="x" if wrong else "o", ms=8 if wrong else 7, mfc="none",
                    mec=CROSS if wrong else RING, mew=2 if wrong else 1.2)
    for i, j in sorted(head.cells) if head is not None else ():
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec=BOX, lw=1.6))
    Tq, Tk = len(m), len(m[0]) if m else 0
    if Tq <= NUMBERS and Tk <= NUMBERS:  # small maps: each weight's number, below the ring
        for i, row in enumerate(data):
            for j, v in enumerate(row):
                if v == v:  # not NaN
                    ax.text(j, i + 0.3, f"{v:.2f}", ha="center", va="center", fontsize=5.5,
                            color="black" if v > 0.6 else "white")
    ax.set_xticks(range(Tk))
    ax.set_yticks(range(Tq))
    ax.tick_params(labelsize=7)
    ax.set_xlabel("key", fontsize=8)
    ax.set_ylabel("query", fontsize=8)
    return image


def finding_picture(pic: dict) -> bytes | None:
    """A finding's two heatmaps (yours, then the expected one) as PNG bytes, for a notebook's report: one colour
    scale for both, yours boxed in red where it differs by more than DIFF, each number on small maps. None where
    the data is unusable. The title is the finding's own, where matplotlib's fonts can draw it."""
    import io

    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    from attn_drill.i18n import t

    def grid(m):
        rows = [[float("nan") if v is None else float(v) for v in row] for row in m or []]
        return rows if rows and rows[0] and all(len(r) == len(rows[0]) for r in rows) else None

    yours, expected = grid(pic.get("yours")), grid(pic.get("expected"))
    if yours is None or expected is None or len(yours) != len(expected) or len(yours[0]) != len(expected[0]):
        return None
    Tq, Tk = len(expected), len(expected[0])
    seen = [v for m in (yours, expected) for row in m for v in row if v == v]
    lo, hi = (min(seen), max(seen)) if seen else (0.0, 1.0)
    lo, hi = (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)
    panel = (max(2.6, CELL * Tk + 1.0), max(2.2, CELL * Tq + 0.9))
    fig = Figure(figsize=(panel[0] * 2 + 1.0, panel[1] + 1.0), layout="constrained")
    axes = fig.subplots(1, 2, squeeze=False)[0]
    import matplotlib

    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="lightgrey")
    image = None
    for side, (ax, m) in enumerate(zip(axes, (yours, expected))):
        image = ax.imshow(m, vmin=lo, vmax=hi, cmap=cmap, interpolation="nearest")
        label, font = _drawable(t("report.yours") if side == 0 else t("report.expected"),
                                "yours" if side == 0 else "expected")
        ax.set_title(label, fontsize=9, **font)
        for i in range(Tq):
            for j in range(Tk):
                y, e = yours[i][j], expected[i][j]
                if side == 0 and not (abs(y - e) <= DIFF * max(1.0, abs(e))):  # NaN differs too
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec=BOX, lw=1.6))
                v = m[i][j]
                if Tq <= NUMBERS and Tk <= NUMBERS and v == v:
                    bright = (v - lo) / (hi - lo) > 0.6
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                            color="black" if bright else "white")
        ax.set_xticks(range(Tk))
        ax.set_yticks(range(Tq))
        ax.tick_params(labelsize=7)
    fig.colorbar(image, ax=axes, shrink=0.9, aspect=25)
    title, font = _drawable(pic.get("title") or "", "")
    if title:
        fig.suptitle(textwrap.fill(title, 90), fontsize=10, **font)
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100)
    return out.getvalue()


def _drawable(text: str, fallback: str) -> tuple[str, dict]:
    """(`text`, the font keywords that draw it) where matplotlib has a font for it (Chinese needs a CJK one), else
    (`fallback`, {})."""
    if text.isascii():
        return text, {}
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    cjk = ("Noto Sans CJK SC", "Noto Serif CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
           "SimHei", "Microsoft YaHei", "PingFang SC", "Heiti SC", "Hiragino Sans GB", "Arial Unicode MS")
    found = next((n for n in cjk if n in names), None)
    return (text, {"fontfamily": found}) if found else (fallback, {})
