"""Known mistakes of attention's backward pass (attention-backward), as executable variants.

`attention_backward` computes the model answer with default knobs (tests/test_reference_attention_backward.py
holds it to autograd); each knob reproduces one real mistake. A transposed operand raises when Tq != Tk, as the
user's code does (match() counts a raise where the user's code raises as reproduced).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class BackwardKnobs:
    scale: float | None = None  # what the forward's scores are multiplied by (and dq, dk): None = 1/sqrt(d)
    forward_scale: float | None = None  # the forward's alone, when it differs from dq's and dk's (None: `scale`)
    unscaled: str = "none"  # which of dq, dk leave out the scale, the forward right: none | both | dq | dk
    rowsum: str = "ok"  # ok: dS = P (dP - rowsum(dP P)) | none (dS = P dP) | dp (rowsum(dP) subtracted, no P)
    transposed: str = "none"  # none | dv (P dout) | dk (dS q) | dq (dS^T k) | dp (v dout^T)
    mask: str = "ok"  # ok | ignored
    softmax_dim: int = -1


RIGHT_BACKWARD = BackwardKnobs()


def attention_backward(q, k, v, dout, mask=None, knobs: BackwardKnobs = RIGHT_BACKWARD):
    scale = 1.0 / math.sqrt(q.size(-1)) if knobs.scale is None else knobs.scale
    scores = q @ k.transpose(-2, -1) * (scale if knobs.forward_scale is None else knobs.forward_scale)
    if mask is not None and knobs.mask == "ok":
        scores = scores.masked_fill(~mask, float("-inf"))
    p = torch.softmax(scores, dim=knobs.softmax_dim)
    dv = (p @ dout) if knobs.transposed == "dv" else p.transpose(-2, -1) @ dout
    dp = v @ dout.transpose(-2, -1) if knobs.transposed == "dp" else dout @ v.transpose(-2, -1)
    row = {"ok": (dp * p).sum(dim=-1, keepdim=True), "none": 0.0, "dp": dp.sum(dim=-1, keepdim=True)}[knobs.rowsum]
    ds = p * (dp - row)
    q_scale = 1.0 if knobs.unscaled in ("both", "dq") else scale
    k_scale = 1.0 if knobs.unscaled in ("both", "dk") else scale
    dq = (ds.transpose(-2, -1) @ k if knobs.transposed == "dq" else ds @ k) * q_scale
    dk = (ds @ q if knobs.transposed == "dk" else ds.transpose(-2, -1) @ q) * k_scale
    return dq, dk, dv
