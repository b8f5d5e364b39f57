"""sdpa: scaled_dot_product_attention(q, k, v, mask=None) -> (out, weights)."""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.variants import attention as variants
from attn_drill.judge.specs.base import Case, Spec, random_mask, reference_module, resolve_function


class SDPASpec(Spec):
    id = "sdpa"
    file = "sdpa.py"
    name = "scaled_dot_product_attention"
    outputs = ("out", "weights")
    axes = {"out": ("batch", "head", "query", "feature"), "weights": ("batch", "head", "query", "key")}
    maps = "returned"  # attn-drill show

    def resolve(self, module):
        return resolve_function(module, self.name, f"{self.name}(q, k, v, mask=None)", [((1, 2, 3), {"mask": None})])

    def cases(self, gen):
        def qkv(lead, Tq, Tk, d, dv):
            return (torch.randn(*lead, Tq, d, generator=gen, dtype=torch.float64),
                    torch.randn(*lead, Tk, d, generator=gen, dtype=torch.float64),
                    torch.randn(*lead, Tk, dv, generator=gen, dtype=torch.float64))

        def case(lead, Tq, Tk, d, dv, mask_shape):
            q, k, v = qkv(lead, Tq, Tk, d, dv)
            mask = None if mask_shape is None else random_mask(gen, *mask_shape)
            dims = dict(zip(("B", "H"), lead)) | {"Tq": Tq, "Tk": Tk, "d": d, "dv": dv}
            label = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, " + (
                f"mask {tuple(mask.shape)}" if mask is not None else t("evidence.attention.specs_base.no_mask"))
            return Case(label, {"q": q, "k": k, "v": v, "mask": mask}, dims)

        return [
            case((2, 3), 5, 6, 7, 4, (2, 1, 5, 6)),  # every size distinct, dv != d, mask broadcast over heads
            case((2, 3), 5, 6, 7, 4, None),
            case((3,), 4, 6, 8, 8, (4, 6)),  # one leading dim, a (Tq, Tk) mask
            case((3, 3), 5, 5, 5, 5, (3, 3, 5, 5)),  # B == H, a full per-head mask
            case((), 5, 6, 7, 3, (5, 6)),  # no leading dims at all
        ]

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False):
        x = case.cast(dtype, device)
        if grad:
            for n in ("q", "k", "v"):
                x[n].requires_grad_(True)
        kwargs = {"mask": x["mask"]} if x["mask"] is not None else {}
        return target(x["q"], x["k"], x["v"], **kwargs), None, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        x = {n: (t.double() if t is not None and t.dtype != torch.bool else t) for n, t in case.cast(dtype).items()}
        if grad:
            for n in ("q", "k", "v"):
                x[n].requires_grad_(True)
        fn = reference_module(self.file).scaled_dot_product_attention
        return fn(x["q"], x["k"], x["v"], x["mask"]), None, x

    def variant(self, case, knobs):
        x = case.inputs
        return variants.attention(x["q"], x["k"], x["v"], x["mask"], knobs)

    def expected_shapes(self, case):
        q, k, v = case.inputs["q"], case.inputs["k"], case.inputs["v"]
        return {"out": tuple(q.shape[:-1]) + (v.size(-1),), "weights": tuple(q.shape[:-1]) + (k.size(-2),)}

    def raw_scores(self, case):
        return case.inputs["q"] @ case.inputs["k"].transpose(-2, -1)

    def visible(self, case):
        return case.inputs["mask"]

    def scale_names(self, case):
        names = super().scale_names(case)
        d, dv = case.dims["d"], case.dims["dv"]
        if dv != d:
            names[t("evidence.attention.specs_sdpa.value_dim", dv=dv)] = dv ** -0.5
        return names

    def grad_inputs(self, x, module):
        return {n: x[n] for n in ("q", "k", "v")}
