import torch
from torch import nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * (x.square().mean(-1, keepdim=True) + self.eps).rsqrt())


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def _rope(x, pos, base):
    d = x.shape[-1]
    inv = base ** -(torch.arange(0, d, 2, device=x.device, dtype=x.dtype) / d)
    ang = pos.to(x.dtype)[..., None] * inv
    ang = torch.cat((ang, ang), -1)
    if ang.dim() == 3:
        ang = ang[:, None]
    x1, x2 = x.chunk(2, dim=-1)
    return x * ang.cos() + torch.cat((-x2, x1), -1) * ang.sin()


class LlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.hkv, self.dh = num_heads, num_kv_heads, d_model // num_heads
        self.base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, positions=None):
        B, T, D = x.shape
        pos = torch.arange(T, device=x.device) if positions is None else positions
        y = self.attn_norm(x)
        q = self.W_q(y).unflatten(-1, (self.h, self.dh)).transpose(1, 2)
        k = self.W_k(y).unflatten(-1, (self.hkv, self.dh)).transpose(1, 2)
        v = self.W_v(y).unflatten(-1, (self.hkv, self.dh)).transpose(1, 2)
        q, k = _rope(q, pos, self.base), _rope(k, pos, self.base)
        idx = torch.arange(self.h, device=x.device) // (self.h // self.hkv)
        k, v = k[:, idx], v[:, idx]
        s = (q @ k.transpose(-2, -1)) * self.dh ** -0.5
        i = torch.arange(T, device=x.device)
        keep = i[None, :] <= i[:, None]
        s = s.masked_fill(~keep, torch.finfo(s.dtype).min)
        o = s.softmax(-1) @ v
        h = x + self.W_o(o.transpose(1, 2).flatten(2))
        return h + self.ffn(self.ffn_norm(h))
