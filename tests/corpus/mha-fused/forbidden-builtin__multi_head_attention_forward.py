"""Hands W_qkv's weight to F.multi_head_attention_forward as the packed in_proj_weight."""

import torch.nn.functional as F
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.d_model, self.num_heads = d_model, num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        xt = x.transpose(0, 1)  # (T, B, D): the function's default layout
        out, weights = F.multi_head_attention_forward(
            xt, xt, xt, self.d_model, self.num_heads,
            self.W_qkv.weight, self.W_qkv.bias, None, None, False, 0.0,
            self.W_o.weight, self.W_o.bias, training=False,
            key_padding_mask=None if mask is None else ~mask[:, 0],
            need_weights=True, average_attn_weights=False)
        return out.transpose(0, 1), weights
