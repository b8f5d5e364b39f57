"""relative-position: class RelativeSelfAttention(d_model, num_heads, max_distance), forward(x, mask=None).

Shaw et al.'s relative keys: scores (q_i . k_j + q_i . r_ij) / sqrt(d), r_ij = rel_k(clip(j - i) + max_distance).
Most cases have T > 2 * max_distance + 1, so clipping shows; one has T <= max_distance + 1, so that code which
never clips still runs somewhere and the mistake is named from what it does, with its exception as evidence.
"""

from __future__ import annotations

import torch
from torch import nn

from attn_drill import findings, i18n
from attn_drill.i18n import t
from attn_drill.judge.variants import relpos as variants_relpos
from attn_drill.judge.specs.base import roomy_mask
from attn_drill.judge.specs.modules import SelfAttentionSpec, random_case
from attn_drill.judge.variants.attention import Knobs, linear

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


class RelPosSpec(SelfAttentionSpec):
    id = "relative-position"
    file = "relative_position.py"
    name = "RelativeSelfAttention"
    layers = PROJECTIONS  # the nn.Linear layers; rel_k (an nn.Embedding) is checked and filled apart
    positional = ("d_model", "num_heads", "max_distance")
    keyword = None  # no bias argument: every layer has one
    signature = "__init__(self, d_model, num_heads, max_distance)"

    def biased(self, case):
        return True

    def layer_text(self, name):
        return "nn.Linear(d_model, d_model)"

    def cases(self, gen):
        def case(B, H, T, d, m, mask_kind):
            D = H * d
            label = f"B={B} H={H} T={T} d={d} (D={D}) max_distance={m}"
            config = {"d_model": D, "num_heads": H, "max_distance": m}
            dims = {"B": B, "H": H, "T": T, "d": d, "D": D, "max_distance": m}
            c = random_case(gen, dims, config | {"bias": True}, self.layer_shapes(config), mask_kind, label,
                            roomy_mask)
            c.config = config  # every layer has a bias, but it is not a constructor argument
            c.params["rel_k.weight"] = torch.randn(2 * m + 1, d, generator=gen, dtype=torch.float64)
            return c

        return [
            case(2, 3, 9, 5, 2, "full"),  # T = 9 > 2*2+1: far offsets share the clipped embeddings
            case(2, 3, 8, 4, 1, "keys"),  # a (B, 1, T) padding-style mask; only 3 embeddings
            case(2, 2, 4, 6, 3, None),  # T <= max_distance + 1: every offset fits the table, nothing to clip
            case(3, 3, 7, 4, 2, "full"),  # B == H: a mask without a head axis broadcasts silently here
            case(2, 4, 11, 3, 3, None),
        ]

    def check_module(self, module, case):
        bad = super().check_module(module, case)
        if bad:
            return bad
        m, d = case.config["max_distance"], case.dims["d"]
        table = getattr(module, "rel_k", None)
        weight = getattr(table, "weight", None)
        if not isinstance(table, nn.Module) or not isinstance(weight, torch.Tensor):
            return findings.make("missing-name", t("evidence.attention.specs_relative_position.not_a_layer"),
                                 score=1.0, name="self.rel_k",
                                 where=i18n.t("finding.in_init",
                                              layer="nn.Embedding(2 * max_distance + 1, d_model // num_heads)"))
        if tuple(weight.shape) != (2 * m + 1, d):
            return findings.make("wrong-signature", t("evidence.attention.specs_relative_position.table_is",
                                                      shape=tuple(weight.shape), constructor=self.constructor(case),
                                                      rows=2 * m + 1, d=d), score=1.0,
                                 name="self.rel_k", expected="nn.Embedding(2 * max_distance + 1, d_model // num_heads)")
        return None

    def build(self, cls, case, dtype, device="cpu"):
        module, bad = super().build(cls, case, dtype, device)
        if module is not None:
            with torch.no_grad():
                module.rel_k.weight.copy_(case.params["rel_k.weight"])
        return module, bad

    def variant(self, case, knobs: Knobs):
        H, m = case.dims["H"], case.dims["max_distance"]
        return variants_relpos.relative(case.params, H, m, case.inputs["x"], case.inputs["mask"], knobs)

    def raw_scores(self, case):
        return variants_relpos.relative_qk(case.params, case.dims["H"], case.dims["max_distance"], case.inputs["x"])

    def projected(self, case) -> dict[str, torch.Tensor]:
        return {n: linear(case.inputs["x"], case.params, n) for n in ("W_q", "W_k", "W_v")}

    def grad_inputs(self, x, module):
        grads = super().grad_inputs(x, module)
        grads["rel_k.weight"] = module.rel_k.weight
        return grads
