"""self-attention: class SelfAttention(dim, dk, dv, bias=True), forward(x, mask=None); one head, no W_o.

(specs/self_attention.py is the base the self-attention *modules* share; this is the single-head exercise.)
"""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.variants import modules as module_variants
from attn_drill.judge.specs.base import roomy_mask
from attn_drill.judge.specs.modules import SelfAttentionSpec, random_case
from attn_drill.judge.variants.attention import Knobs, linear


class SingleHeadSpec(SelfAttentionSpec):
    id = "self-attention"
    file = "self_attention.py"
    name = "SelfAttention"
    layers = ("W_q", "W_k", "W_v")
    axes = {"out": ("batch", "query", "feature"), "weights": ("batch", "query", "key")}
    positional = ("dim", "dk", "dv")
    signature = "__init__(self, dim, dk, dv, bias=True)"

    def layer_shapes(self, config):
        dim, dk, dv = config["dim"], config["dk"], config["dv"]
        return {"W_q": (dk, dim), "W_k": (dk, dim), "W_v": (dv, dim)}

    def layer_text(self, name):
        return f"nn.Linear(dim, {'dv' if name == 'W_v' else 'dk'}, bias=bias)"

    def cases(self, gen):
        def case(B, T, dim, dk, dv, mask_kind, bias=True):
            label = f"B={B} T={T} dim={dim} dk={dk} dv={dv}{'' if bias else ', bias=False'}"
            config = {"dim": dim, "dk": dk, "dv": dv, "bias": bias}
            dims = {"B": B, "T": T, "dim": dim, "dk": dk, "dv": dv, "d": dk, "D": dim}
            return random_case(gen, dims, config, self.layer_shapes(config), mask_kind, label, roomy_mask)

        # dk, dv and dim all differ, so a scale by sqrt(dv) or sqrt(dim) shows, and so does a dv-wide q
        return [
            case(2, 5, 6, 4, 7, "full"),  # (the dtype and device stages use this one)
            case(2, 6, 9, 5, 3, "keys"),  # a (B, 1, T) padding-style mask
            case(3, 4, 8, 6, 2, None, bias=False),
            case(2, 7, 5, 3, 8, "full"),
            case(4, 5, 7, 9, 4, None),  # dk wider than dim
        ]

    def variant(self, case, knobs: Knobs):
        return module_variants.single_head(case.params, case.inputs["x"], case.inputs["mask"], knobs)

    def expected_shapes(self, case):
        B, T, dv = (case.dims[n] for n in ("B", "T", "dv"))
        return {"out": (B, T, dv), "weights": (B, T, T)}

    def raw_scores(self, case):
        q, k = (linear(case.inputs["x"], case.params, n) for n in ("W_q", "W_k"))
        return q @ k.transpose(-2, -1)  # (B, T, T)

    def visible(self, case):
        return case.inputs["mask"]  # (B, T or 1, T): one head, so it lines up with the weights as it is

    def scale_names(self, case):
        dk, dv, dim = (case.dims[n] for n in ("dk", "dv", "dim"))
        return {t("evidence.attention.specs_base.no_scale"): 1.0, f"1/{dk} = 1/dk": 1.0 / dk,
                t("evidence.attention.specs_self_attention.multiplied", dk=dk): dk ** 0.5,
                f"1/sqrt({dv}) = 1/sqrt(dv)": dv ** -0.5, f"1/sqrt({dim}) = 1/sqrt(dim)": dim ** -0.5,
                f"1/{dv} = 1/dv": 1.0 / dv}

    def projected(self, case) -> dict[str, torch.Tensor]:
        return {n: linear(case.inputs["x"], case.params, n) for n in self.layers}
