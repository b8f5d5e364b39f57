import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        norm = x / (torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True)) + self.eps)  # MISTAKE
        return norm * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        g = self.w1(x)
        return self.w2(g * torch.sigmoid(g) * self.w3(x))


def softmax_lastdim(s):
    s = s - s.amax(dim=-1, keepdim=True)
    e = torch.exp(s)
    return e / e.sum(dim=-1, keepdim=True)


class LlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.D = d_model
        self.H = num_heads
        self.Hkv = num_kv_heads
        self.hd = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, self.Hkv * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, self.Hkv * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def apply_rope(self, x, pos):
        # x (B, H, T, d); pos (B, T)
        d = x.shape[-1]
        fd = torch.promote_types(x.dtype, torch.float32)
        expo = torch.arange(d // 2, device=x.device, dtype=fd) * (2.0 / d)
        ang = torch.einsum("bt,f->btf", pos.to(fd), self.rope_base ** (-expo))
        c = torch.cos(ang).unsqueeze(1).to(x.dtype)
        s = torch.sin(ang).unsqueeze(1).to(x.dtype)
        xs = x.unflatten(-1, (2, d // 2))        # (..., 2, d/2): first half, second half
        a, b = xs[..., 0, :], xs[..., 1, :]
        return torch.cat((a * c - b * s, b * c + a * s), dim=-1)

    def _attention(self, x, pos):
        B, T, _ = x.shape
        q = self.W_q(x).reshape(B, T, self.H, self.hd).permute(0, 2, 1, 3)
        k = self.W_k(x).reshape(B, T, self.Hkv, self.hd).permute(0, 2, 1, 3)
        v = self.W_v(x).reshape(B, T, self.Hkv, self.hd).permute(0, 2, 1, 3)
        q, k = self.apply_rope(q, pos), self.apply_rope(k, pos)
        rep = self.H // self.Hkv
        k = torch.repeat_interleave(k, rep, dim=1)
        v = torch.repeat_interleave(v, rep, dim=1)

        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.hd)
        idx = torch.arange(T, device=x.device)
        allowed = idx[None, :] <= idx[:, None]
        scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
        probs = softmax_lastdim(scores)
        ctx = torch.einsum("bhqk,bhkd->bhqd", probs, v)
        ctx = ctx.permute(0, 2, 1, 3).reshape(B, T, self.D)
        return self.W_o(ctx)

    def forward(self, x, positions=None):
        B, T, _ = x.shape
        if positions is None:
            positions = torch.arange(T, device=x.device)
        if positions.dim() == 1:
            positions = positions.unsqueeze(0).expand(B, T)
        h = x + self._attention(self.attn_norm(x), positions)
        out = h + self.ffn(self.ffn_norm(h))
        return out
