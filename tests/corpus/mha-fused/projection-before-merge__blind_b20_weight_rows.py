"""Fused self-attention that skips the explicit merge: each head's output is multiplied by its block of
W_o's weight and the heads are summed (plus the bias) in one einsum. Mistake: the block is cut as
W_o.weight.view(H, d, D), i.e. rows h*d..(h+1)*d (output features) of the (out, in) weight, instead of
its columns [:, h*d:(h+1)*d]; so W_o is applied per head in a way that changes the result."""

import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H = self.num_heads
        d = D // H
        q, k, v = (t.view(B, T, H, d).transpose(1, 2) for t in self.W_qkv(x).chunk(3, dim=-1))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        y = torch.matmul(weights, v)  # (B, H, T, d)
        out = torch.einsum("bhtd,hde->bte", y, self.W_o.weight.view(H, d, D))  # MISTAKE
        if self.W_o.bias is not None:
            out = out + self.W_o.bias
        return out, weights
