import math

import torch
from torch import nn


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(bs, slen, n_kv_heads, head_dim) -> (bs, slen, n_kv_heads * n_rep, head_dim), Meta's layout."""
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (
        x[:, :, None, :, :].expand(bs, slen, n_rep, n_kv_heads, head_dim)  # MISTAKE: copies axis before the kv-head axis, so the kv heads are tiled
        .reshape(bs, slen, n_kv_heads * n_rep, head_dim)
    )


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv_heads = num_kv_heads
        self.n_rep = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_o = nn.Linear(num_heads * self.head_dim, d_model, bias=bias)

    def forward(self, x, mask=None):
        bsz, seqlen, _ = x.shape
        xq = self.W_q(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.W_k(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.W_v(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)

        keys = repeat_kv(xk, self.n_rep)
        values = repeat_kv(xv, self.n_rep)

        xq = xq.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        scores = torch.softmax(scores, dim=-1)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.W_o(output), scores
