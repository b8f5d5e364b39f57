"""mha-dims: class MultiHeadAttentionDims(dim, num_heads, dk, dv, bias=True), forward(query, key, value, mask=None).

Multi-head attention whose head widths are given: W_q and W_k give num_heads * dk features, W_v
num_heads * dv, and W_o maps num_heads * dv back to dim. The cases keep num_heads * dk != dim and dk != dv.
"""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.variants import attention as variants
from attn_drill.judge.specs.base import Case, random_params, roomy_mask
from attn_drill.judge.specs.mha import MHASpec


class MHADimsSpec(MHASpec):
    id = "mha-dims"
    file = "mha_dims.py"
    name = "MultiHeadAttentionDims"
    positional = ("dim", "num_heads", "dk", "dv")
    signature = "__init__(self, dim, num_heads, dk, dv, bias=True)"

    def layer_shapes(self, config):
        dim, H, dk, dv = config["dim"], config["num_heads"], config["dk"], config["dv"]
        return {"W_q": (H * dk, dim), "W_k": (H * dk, dim), "W_v": (H * dv, dim), "W_o": (dim, H * dv)}

    def layer_text(self, name):
        return {"W_q": "nn.Linear(dim, num_heads * dk, bias=bias)", "W_k": "nn.Linear(dim, num_heads * dk, bias=bias)",
                "W_v": "nn.Linear(dim, num_heads * dv, bias=bias)",
                "W_o": "nn.Linear(num_heads * dv, dim, bias=bias)"}[name]

    def cases(self, gen):
        def case(B, H, Tq, Tk, dim, dk, dv, mask_kind, bias=True, self_attn=False):
            query = torch.randn(B, Tq, dim, generator=gen, dtype=torch.float64)
            key = query if self_attn else torch.randn(B, Tk, dim, generator=gen, dtype=torch.float64)
            value = query if self_attn else torch.randn(B, Tk, dim, generator=gen, dtype=torch.float64)
            mask = {None: None, "full": (B, Tq, Tk), "keys": (B, 1, Tk)}[mask_kind]
            mask = None if mask is None else roomy_mask(gen, *mask)
            label = (f"B={B} H={H} Tq={Tq} Tk={Tk} dim={dim} dk={dk} dv={dv}{'' if bias else ', bias=False'}, "
                     + (f"mask {tuple(mask.shape)}" if mask is not None else t("evidence.attention.specs_base.no_mask"))
                     + (t("evidence.attention.specs_base.self_attention") if self_attn else ""))
            config = {"dim": dim, "num_heads": H, "dk": dk, "dv": dv, "bias": bias}
            dims = {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "dim": dim, "dk": dk, "dv": dv, "d": dk, "D": dim}
            return Case(label, {"query": query, "key": key, "value": value, "mask": mask}, dims, config=config,
                        params=random_params(gen, self.layer_shapes(config), bias))

        # num_heads * dk != dim and dk != dv everywhere; Tq != Tk both ways
        return [
            case(2, 3, 6, 5, 10, 4, 7, "full"),  # every size distinct, Tq > Tk (the dtype and device stages use this one)
            case(2, 3, 5, 7, 8, 5, 2, "keys"),  # a (B, 1, Tk) padding-style mask
            case(2, 2, 5, 5, 9, 6, 3, None, self_attn=True),
            case(3, 3, 4, 4, 7, 4, 5, "full"),  # B == H: a mask without a head axis broadcasts silently here
            case(2, 4, 3, 7, 6, 3, 4, None, bias=False),
        ]

    def expected_shapes(self, case):
        B, H, Tq, Tk, dim = (case.dims[n] for n in ("B", "H", "Tq", "Tk", "dim"))
        return {"out": (B, Tq, dim), "weights": (B, H, Tq, Tk)}

    def scale_names(self, case):
        H, dk, dv, dim = (case.dims[n] for n in ("H", "dk", "dv", "dim"))
        return {t("evidence.attention.specs_base.no_scale"): 1.0, f"1/{dk} = 1/dk": 1.0 / dk,
                t("evidence.attention.specs_mha_dims.multiplied", dk=dk): dk ** 0.5,
                f"1/sqrt({dv}) = 1/sqrt(dv)": dv ** -0.5, f"1/sqrt({dim}) = 1/sqrt(dim)": dim ** -0.5,
                f"1/sqrt({H * dk}) = 1/sqrt(num_heads * dk)": (H * dk) ** -0.5,
                f"1/sqrt({dim // H}) = 1/sqrt(dim // num_heads)": (dim // H) ** -0.5}

    def variant(self, case, knobs):
        x = case.inputs
        # variants.mha splits each projection by its own width (its last dim // H): dk for q and k, dv for v
        return variants.mha(case.params, case.dims["H"], x["query"], x["key"], x["value"], x["mask"], knobs)
