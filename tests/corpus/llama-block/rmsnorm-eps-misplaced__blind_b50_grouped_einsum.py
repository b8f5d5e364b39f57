import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        ms = xf.pow(2).mean(dim=-1, keepdim=True)
        normed = xf / (torch.sqrt(ms) + self.eps)  # MISTAKE: eps added after the square root, not inside it
        return normed.to(x.dtype) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        gate = self.w1(x)
        return self.w2(gate * torch.sigmoid(gate) * self.w3(x))


def rope(t, cos, sin):
    h = t.shape[-1] // 2
    t1, t2 = t[..., :h], t[..., h:]
    return torch.cat((t1 * cos - t2 * sin, t2 * cos + t1 * sin), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.H, self.G = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def _angles(self, positions, like):
        acc = torch.promote_types(like.dtype, torch.float32)
        i = torch.arange(self.d // 2, device=like.device, dtype=acc)
        theta = positions.to(acc).unsqueeze(-1) * torch.pow(self.base, -2 * i / self.d)
        if theta.dim() == 3:  # (B, T, d/2) -> (B, 1, 1, T, d/2)
            theta = theta[:, None, None]
        return theta.cos().to(like.dtype), theta.sin().to(like.dtype)

    def forward(self, x, positions=None):
        B, T, D = x.shape
        H, G, d = self.H, self.G, self.d
        rep = H // G
        if positions is None:
            positions = torch.arange(T, device=x.device)

        a = self.attn_norm(x)
        q = self.W_q(a).view(B, T, G, rep, d).permute(0, 2, 3, 1, 4)  # (B, G, rep, T, d): head h = g * rep + r
        k = self.W_k(a).view(B, T, G, 1, d).permute(0, 2, 3, 1, 4)  # (B, G, 1, T, d)
        v = self.W_v(a).view(B, T, G, 1, d).permute(0, 2, 3, 1, 4)
        cos, sin = self._angles(positions, x)
        q, k = rope(q, cos, sin), rope(k, cos, sin)

        s = torch.einsum("bgrid,bgzjd->bgrij", q, k) / math.sqrt(d)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        s = s.masked_fill(future, float("-inf"))
        p = s.softmax(dim=-1)
        o = torch.einsum("bgrij,bgzjd->bgrid", p, v)
        o = o.permute(0, 3, 1, 2, 4).reshape(B, T, D)
        h = x + self.W_o(o)
        return h + self.ffn(self.ffn_norm(h))
