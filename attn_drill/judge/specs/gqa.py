"""gqa: class GroupedQueryAttention(d_model, num_heads, num_kv_heads, bias=False), forward(x, mask=None)."""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.variants import modules as module_variants
from attn_drill.judge.specs.base import grouped_layer_shapes
from attn_drill.judge.specs.modules import SelfAttentionSpec, random_case
from attn_drill.judge.variants.attention import Knobs, linear


class GQASpec(SelfAttentionSpec):
    id = "gqa"
    file = "gqa.py"
    name = "GroupedQueryAttention"
    layers = ("W_q", "W_k", "W_v", "W_o")
    positional = ("d_model", "num_heads", "num_kv_heads")
    signature = "__init__(self, d_model, num_heads, num_kv_heads, bias=False)"

    def layer_shapes(self, config):
        return grouped_layer_shapes(config)

    def layer_text(self, name):
        if name in ("W_k", "W_v"):
            return "nn.Linear(d_model, num_kv_heads * (d_model // num_heads), bias=bias)"
        return super().layer_text(name)

    def cases(self, gen):
        def case(B, H, Hkv, T, d, mask_kind, bias=False):
            D = H * d
            label = f"B={B} H={H} Hkv={Hkv} T={T} d={d} (D={D}{', bias=True' if bias else ''})"
            config = {"d_model": D, "num_heads": H, "num_kv_heads": Hkv, "bias": bias}
            dims = {"B": B, "H": H, "Hkv": Hkv, "T": T, "d": d, "D": D}
            return random_case(gen, dims, config, self.layer_shapes(config), mask_kind, label)

        # repeat and repeat_interleave differ only with Hkv > 1 and groups > 1: three cases have both
        return [
            case(2, 6, 2, 5, 4, "full"),  # groups of 3 (the dtype and device stages use this one)
            case(2, 4, 2, 6, 5, "keys", bias=True),  # a (B, 1, T) padding-style mask
            case(2, 4, 1, 5, 6, None),  # one kv head: multi-query attention
            case(4, 4, 2, 4, 3, "full"),  # B == H: a mask without a head axis broadcasts silently here
            case(3, 3, 3, 5, 4, None),  # one kv head per query head: plain multi-head attention
        ]

    def variant(self, case, knobs: Knobs):
        H, Hkv = case.dims["H"], case.dims["Hkv"]
        return module_variants.gqa(case.params, H, Hkv, case.inputs["x"], case.inputs["mask"], knobs)

    def raw_scores(self, case):
        q, k, _ = module_variants.gqa_qkv(case.params, case.dims["H"], case.dims["Hkv"], case.inputs["x"])
        return q @ k.transpose(-2, -1)  # (B, H, T, T)

    def projected(self, case) -> dict[str, torch.Tensor]:
        return {n: linear(case.inputs["x"], case.params, n) for n in ("W_q", "W_k", "W_v")}

    def scale_names(self, case):
        names = super().scale_names(case)
        kv = case.dims["Hkv"] * case.dims["d"]
        if kv != case.dims["d"]:
            names[t("evidence.attention.specs_gqa.width_of_w_k", kv=kv)] = kv ** -0.5
        return names
