"""Small pictures of attention weights for the report: the user's beside the expected, for one head."""

from __future__ import annotations

import torch

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
    index = torch.unravel_index(torch.tensor(worst), lead) if lead else ()
    names = {1: ("batch",), 2: ("batch", "head")}.get(len(lead)) or tuple(f"dim {i}" for i in range(len(lead)))
    where = ", ".join(f"{n} {int(i)}" for n, i in zip(names[-len(lead):], index)) if lead else ""

    def rows(t):
        return [[round(float(v), 3) for v in row] for row in torch.nan_to_num(t, nan=-1.0)]

    return {"title": f"weights{f' ({where})' if where else ''}: rows = queries, columns = keys",
            "caption": label, "yours": rows(y2[worst]), "expected": rows(e2[worst])}
