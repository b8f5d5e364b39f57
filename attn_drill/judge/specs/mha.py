"""mha: class MultiHeadAttention(d_model, num_heads, bias=True), forward(query, key, value, mask=None)."""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.variants import attention as variants
from attn_drill.judge.specs.base import Case, ModuleSpec, random_mask, random_params

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


class MHASpec(ModuleSpec):
    id = "mha"
    file = "mha.py"
    name = "MultiHeadAttention"
    layers = PROJECTIONS
    grad_names = ("query", "key", "value")
    outputs = ("out", "weights")
    maps = "returned"  # attn-drill show
    axes = {"out": ("batch", "query", "feature"), "weights": ("batch", "head", "query", "key")}
    positional = ("d_model", "num_heads")
    signature = "__init__(self, d_model, num_heads, bias=True)"
    forward = ((None, 1, 2, 3), {"mask": None}, "forward(self, query, key, value, mask=None)")

    def cases(self, gen):
        def case(B, H, Tq, Tk, d, mask_kind, bias=True, self_attn=False):
            D = H * d
            query = torch.randn(B, Tq, D, generator=gen, dtype=torch.float64)
            key = query if self_attn else torch.randn(B, Tk, D, generator=gen, dtype=torch.float64)
            value = query if self_attn else torch.randn(B, Tk, D, generator=gen, dtype=torch.float64)
            mask = {None: None, "full": lambda: random_mask(gen, B, Tq, Tk),
                    "keys": lambda: random_mask(gen, B, 1, Tk)}[mask_kind]
            mask = mask() if mask else None
            label = (f"B={B} H={H} Tq={Tq} Tk={Tk} d={d} (D={D}{'' if bias else ', bias=False'}), "
                     + (f"mask {tuple(mask.shape)}" if mask is not None else t("evidence.attention.specs_base.no_mask"))
                     + (t("evidence.attention.specs_base.self_attention") if self_attn else ""))
            return Case(label, {"query": query, "key": key, "value": value, "mask": mask},
                        {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "D": D},
                        config={"d_model": D, "num_heads": H, "bias": bias},
                        params=random_params(gen, {n: (D, D) for n in PROJECTIONS}, bias))

        return [
            case(2, 3, 5, 6, 7, "full"),  # every size distinct
            case(2, 3, 5, 6, 7, "keys"),  # a (B, 1, Tk) padding-style mask
            case(2, 3, 5, 5, 7, None, self_attn=True),
            case(3, 3, 4, 4, 4, "full"),  # B == H: a mask without a head axis broadcasts silently here
            case(2, 2, 3, 7, 8, None, bias=False),
        ]

    def feed(self, module, case, x, grad):
        if case.inputs["key"] is case.inputs["query"]:  # self-attention: one tensor passed three times
            x["key"] = x["value"] = x["query"]
        if grad:
            for n in ("query", "key", "value"):
                x[n] = x[n].detach().clone().requires_grad_(True)
        kwargs = {"mask": x["mask"]} if x["mask"] is not None else {}
        return module(x["query"], x["key"], x["value"], **kwargs)

    def variant(self, case, knobs):
        x = case.inputs
        return variants.mha(case.params, case.dims["H"], x["query"], x["key"], x["value"], x["mask"], knobs)

    def expected_shapes(self, case):
        B, H, Tq, Tk, D = (case.dims[n] for n in ("B", "H", "Tq", "Tk", "D"))
        return {"out": (B, Tq, D), "weights": (B, H, Tq, Tk)}

    def raw_scores(self, case):
        q, k = variants.mha_qk(case.params, case.dims["H"], case.inputs["query"], case.inputs["key"])
        return q @ k.transpose(-2, -1)  # (B, H, Tq, Tk)

    def projected(self, case):
        x, p = case.inputs, case.params
        return {n: variants.linear(x[i], p, n) for n, i in (("W_q", "query"), ("W_k", "key"), ("W_v", "value"))}
