"""What the self-attention modules (mha-fused, gqa) share: forward(x, mask=None) -> (out, weights), and their
cases: x (B, T, D) with a mask with no head axis."""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.specs.base import Case, ModuleSpec, random_mask, random_params


def random_case(gen, dims: dict, config: dict, shapes: dict, mask_kind: str | None, label: str,
                make_mask=random_mask) -> Case:
    """x (B, T, D) and a (B, T, T) or (B, 1, T) mask (or none), every row with a visible key."""
    B, T, D = dims["B"], dims["T"], dims["D"]
    x = torch.randn(B, T, D, generator=gen, dtype=torch.float64)
    mask = {None: None, "full": (B, T, T), "keys": (B, 1, T)}[mask_kind]
    mask = None if mask is None else make_mask(gen, *mask)
    label += (f", mask {tuple(mask.shape)}" if mask is not None else ", " + t("evidence.attention.specs_base.no_mask"))
    dims = dims | {"Tq": T, "Tk": T}
    return Case(label, {"x": x, "mask": mask}, dims, config=config,
                params=random_params(gen, shapes, config["bias"]))


class SelfAttentionSpec(ModuleSpec):
    outputs = ("out", "weights")
    maps = "returned"  # attn-drill show
    axes = {"out": ("batch", "query", "feature"), "weights": ("batch", "head", "query", "key")}
    grad_names = ("x",)
    forward = ((None, 1), {"mask": None}, "forward(self, x, mask=None)")

    def feed(self, module, case, x, grad):
        if grad:
            x["x"].requires_grad_(True)
        kwargs = {"mask": x["mask"]} if x["mask"] is not None else {}
        return module(x["x"], **kwargs)

    def expected_shapes(self, case):
        B, H, T, D = (case.dims[n] for n in ("B", "H", "T", "D"))
        return {"out": (B, T, D), "weights": (B, H, T, T)}
