"""mha-fused: class FusedSelfAttention(d_model, num_heads, bias=True), forward(x, mask=None)."""

from __future__ import annotations

import torch

from attn_drill.judge.variants import modules as module_variants
from attn_drill.judge.specs.modules import SelfAttentionSpec, random_case
from attn_drill.judge.variants.attention import Knobs, linear


class FusedSpec(SelfAttentionSpec):
    id = "mha-fused"
    file = "mha_fused.py"
    name = "FusedSelfAttention"
    layers = ("W_qkv", "W_o")
    positional = ("d_model", "num_heads")
    signature = "__init__(self, d_model, num_heads, bias=True)"

    def layer_shapes(self, config):
        D = config["d_model"]
        return {"W_qkv": (3 * D, D), "W_o": (D, D)}

    def layer_text(self, name):
        return "nn.Linear(d_model, 3 * d_model, bias=bias)" if name == "W_qkv" else super().layer_text(name)

    def cases(self, gen):
        def case(B, H, T, d, mask_kind, bias=True):
            D = H * d
            label = f"B={B} H={H} T={T} d={d} (D={D}{'' if bias else ', bias=False'})"
            config = {"d_model": D, "num_heads": H, "bias": bias}
            return random_case(gen, {"B": B, "H": H, "T": T, "d": d, "D": D}, config, self.layer_shapes(config),
                               mask_kind, label)

        return [
            case(2, 3, 5, 7, "full"),  # every size distinct (the dtype and device stages use this one)
            case(2, 3, 6, 7, "keys"),  # a (B, 1, T) padding-style mask
            case(2, 4, 5, 3, None),
            case(3, 3, 4, 4, "full"),  # B == H: a mask without a head axis broadcasts silently here
            case(2, 2, 7, 8, None, bias=False),
        ]

    def variant(self, case, knobs: Knobs):
        return module_variants.fused(case.params, case.dims["H"], case.inputs["x"], case.inputs["mask"], knobs)

    def raw_scores(self, case):
        q, k = module_variants.fused_qk(case.params, case.dims["H"], case.inputs["x"])
        return q @ k.transpose(-2, -1)  # (B, H, T, T)

    def projected(self, case) -> dict[str, torch.Tensor]:
        return {"W_qkv": linear(case.inputs["x"], case.params, "W_qkv")}
