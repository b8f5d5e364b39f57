"""`attn-drill start ID --notebook`: the exercise as a notebook to practise in. No torch, no IPython: a notebook
is JSON (nbformat 4), written here by hand.

Its cells: the task as markdown; `import attn_drill as ad` and `%load_ext attn_drill`; the skeleton in a cell
that starts `%%attn_check ID` (run it to check it); a cell that asks for a hint.
"""

from __future__ import annotations

import json

from attn_drill.catalogue import Exercise


def _cell(kind: str, text: str) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True)}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def notebook(ex: Exercise) -> bytes:
    task = "\n".join(f"    {line}" for line in ex.task.strip("\n").splitlines())
    cells = [
        _cell("markdown", f"# {ex.title} ({ex.id}, target {ex.minutes} min)\n\n{task}\n\n"
                          f"Write your answer in the `%%attn_check {ex.id}` cell and run it: the cell is checked as a "
                          "file of its own (its imports, nothing from other cells), in attn-drill's sandboxed "
                          "checker, and the report shows below it."),
        _cell("code", "import attn_drill as ad\n%load_ext attn_drill"),
        _cell("code", f"%%attn_check {ex.id}\n" + ex.skeleton.read_text(encoding="utf-8")),
        _cell("markdown", "Stuck? Each run of the next cell gives one more hint (your last mistake's first)."),
        _cell("code", f"print(ad.hint({ex.id!r}))"),
    ]
    nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                       "name": "python3"},
                                       "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    for i, cell in enumerate(cells):
        cell["id"] = f"attn-drill-{i}"
    return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
