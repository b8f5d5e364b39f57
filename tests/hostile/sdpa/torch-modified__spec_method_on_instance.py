"""Gives the checker's sdpa spec a reference of its own: an instance attribute that hides the class's method."""
import torch

from attn_drill.judge.specs import SPECS


def scaled_dot_product_attention(q, k, v, mask=None):
    """Uniform weights: wrong everywhere, unless the comparison is rigged."""
    w = torch.ones(*q.shape[:-1], k.size(-2), dtype=q.dtype, device=q.device) / k.size(-2)
    return w @ v, w


def _reference(case, dtype=torch.float64, device="cpu", grad=False):
    x = case.cast(dtype)
    if grad:
        for n in ("q", "k", "v"):
            x[n].requires_grad_(True)
    return scaled_dot_product_attention(x["q"], x["k"], x["v"], x["mask"]), None, x


SPECS["sdpa"].reference = _reference
