"""Small pictures of attention weights for the report: the user's beside the expected, for one head."""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.compare import unravel

MASK_SLUGS = {"mask-inverted", "mask-ignored", "mask-after-softmax", "mask-head-broadcast", "softmax-wrong-dim",
              "mask-fill-zero"}


def for_slug(check, slug: str, example) -> dict | None:
    """A picture for mask and softmax findings, from the case that shows the mistake."""
    if slug not in MASK_SLUGS or example is None or example.outputs is None:
        return None
    if tuple(check.spec.outputs[1:2]) != ("weights",):  # only attention that returns its weights has a picture
        return None
    ref = check.refs[check.outcomes.index(example)]
    return heatmap(example.outputs[1], ref[1], example.case.label)


def heatmap(yours: torch.Tensor, expected: torch.Tensor, label: str) -> dict:
    """Pick the (batch, head) where the two differ most; return both as rounded nested lists."""
    y, e = yours.detach().double().cpu(), expected.detach().double().cpu()
    if y.dim() == 2:
        y, e = y[None], e[None]
    lead = y.shape[:-2]
    y2, e2 = y.reshape(-1, *y.shape[-2:]), e.reshape(-1, *e.shape[-2:])
    worst = int(torch.nan_to_num((y2 - e2).abs(), nan=1.0).flatten(1).sum(1).argmax())
    index = unravel(worst, lead) if lead else ()
    where = _where(len(lead), index)

    def rows(t):
        return [[round(float(v), 3) for v in row] for row in torch.nan_to_num(t, nan=-1.0)]

    title = t("evidence.show.pictures.title_at", where=where) if where else t("evidence.show.pictures.title")
    return {"title": title, "caption": label, "yours": rows(y2[worst]), "expected": rows(e2[worst])}


def _where(n: int, index) -> str:
    """The (batch, head) drawn, in words: "batch 0, head 2"; "dim 0 1, dim 1 0, dim 2 3" past two leading dims."""
    if not n:
        return ""
    keys = {1: ("at_batch",), 2: ("at_batch", "at_head")}.get(n) or ("at_dim",) * n
    return t("evidence.show.pictures.where_sep").join(
        t(f"evidence.show.pictures.{key}", dim=d, i=int(i)) for d, (key, i) in enumerate(zip(keys, index)))
