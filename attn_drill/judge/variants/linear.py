"""Known mistakes of linear attention (linear-attention), as executable variants.

`linear_attention` computes the model answer with default knobs (tests/test_reference_linear_attention.py
proves it); each knob reproduces one real mistake. The sums are written as masked (T, T) products here: the
variants run on the checker's small cases, never under the memory rule the user's code runs under.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attn_drill.i18n import t

# how -> phi; said(how) words the map
FEATURES = {
    "ok": lambda x: F.elu(x) + 1,
    "none": lambda x: x,
    "relu": F.relu,
    "elu": F.elu,
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "exp": torch.exp,
}


def said(how: str) -> str:
    """FEATURES' map `how` in words, in the language in use."""
    return t(f"evidence.modern.variants_linear.{how}")


@dataclass(frozen=True)
class LinearKnobs:
    feature: str = "ok"  # FEATURES
    normaliser: bool = True  # False: out_i = phi(q_i) . S, no denominator
    sums: str = "ok"  # which keys the causal sums cover: ok (j <= i) | all (causal ignored) | strict (j < i)
    #                   | den_all (the numerator causal, the denominator over every j) | num_all (the reverse)
    #                   | suffix (j >= i)


RIGHT_LINEAR = LinearKnobs()


def linear_attention(q, k, v, causal: bool, eps: float, knobs: LinearKnobs = RIGHT_LINEAR):
    phi = FEATURES[knobs.feature]
    fq, fk = phi(q), phi(k)  # (B, H, T, d)
    T = q.size(-2)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    every = torch.ones(T, T, dtype=q.dtype)
    if not causal:
        num_mask = den_mask = every
    else:
        seen = {"ok": j <= i, "all": j >= 0, "strict": j < i, "den_all": j <= i, "num_all": j >= 0,
                "suffix": j >= i}[knobs.sums].to(q.dtype)
        num_mask = every if knobs.sums == "num_all" else seen
        den_mask = every if knobs.sums == "den_all" else seen
    a = fq @ fk.transpose(-2, -1)  # (B, H, T, T): phi(q_i) . phi(k_j)
    num = (a * num_mask) @ v  # (B, H, T, dv)
    if not knobs.normaliser:
        return num
    den = (a * den_mask).sum(-1, keepdim=True)  # (B, H, T, 1)
    return num / (den + eps)
