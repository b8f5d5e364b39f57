"""Two mistakes: no 1/sqrt(d) at all, and masked_fill(mask, -inf) hides the keys the mask allows."""
import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return torch.matmul(attn, v), attn
