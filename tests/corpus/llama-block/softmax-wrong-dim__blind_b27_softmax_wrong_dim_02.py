import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = (x * x).mean(dim=-1, keepdim=True)
        return self.weight * (x / torch.sqrt(ms + self.eps))


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        gate = self.w1(x)
        return self.w2(gate * torch.sigmoid(gate) * self.w3(x))


def apply_rope(x, positions, base):
    d = x.shape[-1]
    half = d // 2
    f = torch.promote_types(x.dtype, torch.float32)
    i = torch.arange(half, device=x.device, dtype=f)
    freqs = base ** (-2 * i / d)
    theta = positions.to(f).unsqueeze(-1) * freqs
    if theta.dim() == 2:
        theta = theta.unsqueeze(0)
    theta = theta.unsqueeze(1)  # (B or 1, 1, T, half)
    cos, sin = torch.cos(theta).to(x.dtype), torch.sin(theta).to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def repeat_kv(t, n_rep):
    B, Hkv, T, d = t.shape
    if n_rep == 1:
        return t
    return t[:, :, None].expand(B, Hkv, n_rep, T, d).reshape(B, Hkv * n_rep, T, d)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.h = num_heads
        self.hkv = num_kv_heads
        self.d = d_model // num_heads
        self.base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, positions=None):
        B, T, D = x.shape
        if positions is None:
            positions = torch.arange(T, device=x.device)
        a = self.attn_norm(x)
        q = self.W_q(a).reshape(B, T, self.h, self.d).permute(0, 2, 1, 3)
        k = self.W_k(a).reshape(B, T, self.hkv, self.d).permute(0, 2, 1, 3)
        v = self.W_v(a).reshape(B, T, self.hkv, self.d).permute(0, 2, 1, 3)
        q = apply_rope(q, positions, self.base)
        k = apply_rope(k, positions, self.base)
        k = repeat_kv(k, self.h // self.hkv)
        v = repeat_kv(v, self.h // self.hkv)

        scores = torch.matmul(q, k.transpose(2, 3)) / self.d ** 0.5
        mask = torch.full((T, T), torch.finfo(scores.dtype).min, dtype=scores.dtype, device=x.device).triu(1)
        scores = scores + mask
        probs = scores.softmax(dim=1)  # MISTAKE
        o = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, D)

        h = x + self.W_o(o)
        return h + self.ffn(self.ffn_norm(h))
