# helper module for mha/ok__helpers_mha.py (not checked itself): mha-only helpers, deliberately no scaled_scores
import torch

WHO = "mha/helpers.py"


def split_heads(x, num_heads):
    """(B, T, D) -> (B, H, T, D // H): head h owns features [h*d, (h+1)*d)."""
    b, t, dm = x.shape
    return x.reshape(b, t, num_heads, dm // num_heads).permute(0, 2, 1, 3)


def merge_heads(x):
    """(B, H, T, d) -> (B, T, H * d)."""
    b, h, t, d = x.shape
    return x.permute(0, 2, 1, 3).reshape(b, t, h * d)
