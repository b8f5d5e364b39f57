"""Mistakes of the self-attention modules (mha-fused, gqa) alone: the fused split order, the kv head mapping.

The scale, softmax, mask and head diagnoses of attention.py apply to these modules as they are (their specs
honour every knob, and say what their own layers should see for probes/modules.py).
"""

from __future__ import annotations

from attn_drill.i18n import t
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import (MATCH, RESHAPES, diagnosis, first_outcome, line_of, locate,
                                        variant_finding)
from attn_drill.judge.variants.attention import Knobs, attention, linear, split_heads

SPLITS = RESHAPES | {"split", "chunk", "unbind", "unflatten", "__getitem__"}


@diagnosis("qkv-split-order", ("mha-fused",))
def qkv_split_order(check):
    c = check.cases[0]
    d, D = c.dims["d"], c.dims["D"]
    how = t("evidence.attention.diagnoses_modules.qkv_per_head", start=3 * d, stop=4 * d, d=d, d2=2 * d, D=D)
    f = variant_finding(check, "qkv-split-order", Knobs(qkv_split="heads"), how,
                        line=line_of(first_outcome(check), SPLITS))
    if f:
        f.evidence += t("evidence.attention.diagnoses_modules.qkv_expected", D=D)
        f.evidence += t("evidence.attention.diagnoses.tail", tail=locate(check))
    return f


@diagnosis("kv-repeat-order", ("gqa",))
def kv_repeat_order(check):
    f = variant_finding(check, "kv-repeat-order", Knobs(kv_repeat="tile"),
                        t("evidence.attention.diagnoses_modules.kv_tiled"),
                        line=line_of(first_outcome(check), {"repeat", "expand", "tile"}))
    if f:
        for o in check.outcomes:
            H, Hkv = o.case.dims["H"], o.case.dims["Hkv"]
            if o.outputs is None or Hkv in (1, H):
                continue  # with one kv head, or one per query head, both orders agree
            mapping = kv_mapping(o)
            if mapping:
                g = H // Hkv
                f.evidence += t("evidence.attention.diagnoses_modules.kv_mapping", last=H - 1, mapping=mapping,
                                expected=[h // g for h in range(H)], case=o.case.label)
                break
    return f


def kv_mapping(o) -> list[int] | None:
    """Which kv head each of the user's query heads reads: the one whose attention reproduces its weights."""
    case, weights = o.case, o.outputs[1].detach().double()
    x, p, mask = case.inputs["x"], case.params, case.inputs["mask"]
    H, Hkv = case.dims["H"], case.dims["Hkv"]
    q = split_heads(linear(x, p, "W_q"), H)  # (B, H, T, d)
    k = split_heads(linear(x, p, "W_k"), Hkv)  # (B, Hkv, T, d)
    mapping = []
    for h in range(H):
        fits = [j for j in range(Hkv)
                if closeness(weights[:, h], attention(q[:, h], k[:, j], k[:, j], mask)[1]) < MATCH]
        if len(fits) != 1:
            return None
        mapping.append(fits[0])
    return mapping

