"""The layer is right; its MultiHeadAttention (from the mha corpus): Delegates to an nn.MultiheadAttention, feeding it W_q/W_k/W_v/W_o's weights through torch.func.functional_call."""

import torch
from torch import nn
from torch.func import functional_call


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        self.mha = nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        params = {
            "in_proj_weight": torch.cat([self.W_q.weight, self.W_k.weight, self.W_v.weight]),
            "out_proj.weight": self.W_o.weight,
        }
        if self.W_q.bias is not None:
            params["in_proj_bias"] = torch.cat([self.W_q.bias, self.W_k.bias, self.W_v.bias])
            params["out_proj.bias"] = self.W_o.bias
        attn_mask = None
        if mask is not None:
            # nn.MultiheadAttention: True = NOT allowed, one (Tq, Tk) mask per (batch, head)
            attn_mask = (~mask).expand(B, Tq, Tk).repeat_interleave(self.num_heads, dim=0)
        out, weights = functional_call(
            self.mha, params, (query, key, value),
            {"attn_mask": attn_mask, "need_weights": True, "average_attn_weights": False},
        )
        return out, weights


import torch  # noqa: E402 (the layer's)
from torch import nn  # noqa: E402


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        T = x.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril().unsqueeze(0)  # (1, T, T)
        self_mask = causal if tgt_mask is None else causal & tgt_mask
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, self_mask)[0]
            h = self.norm2(x)
            x = x + self.cross_attn(h, memory, memory, memory_mask)[0]
            x = x + self.ff2(torch.relu(self.ff1(self.norm3(x))))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, self_mask)[0])
            x = self.norm2(x + self.cross_attn(x, memory, memory, memory_mask)[0])
            x = self.norm3(x + self.ff2(torch.relu(self.ff1(x))))
        return x
