import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        if x.dtype in (torch.float16, torch.bfloat16):
            out = self._norm(x.float()).type_as(x)
        else:
            out = self._norm(x)
        return out * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        up = self.w1(x)
        gate = self.w3(x)
        hidden = up * (gate * torch.sigmoid(gate))  # MISTAKE
        return self.w2(hidden)


def rope(x, positions, base):
    d = x.shape[-1]
    half = d // 2
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    freqs = 1.0 / (base ** (torch.arange(half, device=x.device, dtype=work) / half))
    ang = positions.to(work).unsqueeze(-1) * freqs
    if ang.dim() == 3:
        ang = ang.unsqueeze(1)
    rot = torch.polar(torch.ones_like(ang), ang)
    xw = x.to(work)
    z = torch.complex(xw[..., :half], xw[..., half:]) * rot
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def _attn(self, x, positions):
        B, T, _ = x.shape
        d = self.head_dim
        group = self.num_heads // self.num_kv_heads
        q = self.W_q(x).view(B, T, self.num_heads, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.num_kv_heads, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.num_kv_heads, d).transpose(1, 2)
        q = rope(q, positions, self.rope_base)
        k = rope(k, positions, self.rope_base)

        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        heads = []
        for h in range(self.num_heads):
            kv = h // group
            s = q[:, h] @ k[:, kv].transpose(-1, -2) / math.sqrt(d)
            s = s.masked_fill(~allowed, float("-inf"))
            heads.append(torch.softmax(s, dim=-1) @ v[:, kv])
        out = torch.cat(heads, dim=-1)  # (B, T, H * d)
        return self.W_o(out)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        h = x + self._attn(self.attn_norm(x), positions)
        out = h + self.ffn(self.ffn_norm(h))
        return out
