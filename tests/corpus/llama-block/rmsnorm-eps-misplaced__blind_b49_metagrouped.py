import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        rms = x.norm(dim=-1, keepdim=True) / math.sqrt(x.shape[-1])
        return x / (rms + self.eps)  # MISTAKE: eps added after the root instead of inside it

    def forward(self, x):
        output = self._norm(x.to(torch.promote_types(x.dtype, torch.float32))).type_as(x)
        return output * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        gate = F.silu(self.w1(x))
        return self.w2(gate * self.w3(x))


def rope_half(x, pos, theta):
    # x (B, nh, T, hd); pos (T,) or (B, T); pairs (i, i + hd/2)
    hd = x.shape[-1]
    half = hd // 2
    wt = torch.promote_types(x.dtype, torch.float32)
    freqs = theta ** (-torch.arange(half, device=x.device, dtype=wt) * 2 / hd)
    ang = torch.outer(pos.reshape(-1).to(wt), freqs).reshape(*pos.shape, half)
    if pos.dim() == 2:
        ang = ang[:, None]
    c, s = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    a, b = x[..., :half], x[..., half:]
    return torch.cat((a * c - b * s, a * s + b * c), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.theta = rope_base
        self.attn_norm = RMSNorm(d_model, eps=eps)
        self.ffn_norm = RMSNorm(d_model, eps=eps)
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(num_heads * self.head_dim, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def attention(self, x, pos):
        bsz, seqlen, _ = x.shape
        g = self.n_heads // self.n_kv_heads
        xq = self.W_q(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.W_k(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        xv = self.W_v(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        xq = rope_half(xq, pos, self.theta)
        xk = rope_half(xk, pos, self.theta)
        # group the query heads by the kv head they read: heads kv*g .. kv*g + g - 1 share kv head kv
        xq = xq.reshape(bsz, self.n_kv_heads, g, seqlen, self.head_dim)
        scores = torch.einsum("bkgqd,bksd->bkgqs", xq, xk) / math.sqrt(self.head_dim)
        future = torch.ones(seqlen, seqlen, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        probs = F.softmax(scores, dim=-1)
        out = torch.einsum("bkgqs,bksd->bkgqd", probs, xv)
        out = out.reshape(bsz, self.n_heads, seqlen, self.head_dim).transpose(1, 2).reshape(bsz, seqlen, -1)
        return self.W_o(out)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        h = x + self.attention(self.attn_norm(x), positions)
        out = h + self.ffn(self.ffn_norm(h))
        return out
