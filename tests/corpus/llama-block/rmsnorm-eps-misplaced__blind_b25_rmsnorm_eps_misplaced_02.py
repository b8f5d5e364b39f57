import math
import torch
from torch import nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x / x.pow(2).mean(-1, keepdim=True).sqrt()  # MISTAKE

    def forward(self, x):
        # do the reduction in at least fp32, like Meta's reference
        compute_dtype = torch.promote_types(x.dtype, torch.float32)
        output = self._norm(x.to(compute_dtype)).type_as(x)
        return output * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate
        self.w3 = nn.Linear(dim, hidden, bias=False)  # up
        self.w2 = nn.Linear(hidden, dim, bias=False)  # down

    def forward(self, x):
        gate = F.silu(self.w1(x))
        up = self.w3(x)
        return self.w2(gate * up)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    B, Hkv, T, d = x.shape
    x = x[:, :, None, :, :].expand(B, Hkv, n_rep, T, d)
    return x.reshape(B, Hkv * n_rep, T, d)


class LlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(num_heads * self.head_dim, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def rope_cos_sin(self, positions, batch, dtype, device):
        fdtype = torch.promote_types(dtype, torch.float32)
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.head_dim, 2, device=device, dtype=fdtype) / self.head_dim))
        if positions.dim() == 1:
            positions = positions.unsqueeze(0).expand(batch, -1)
        freqs = positions.to(fdtype)[:, :, None] * inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)  # (B, T, d)
        cos = emb.cos()[:, None].to(dtype)
        sin = emb.sin()[:, None].to(dtype)
        return cos, sin

    def attention(self, x, positions):
        B, T, D = x.shape
        q = self.W_q(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)

        cos, sin = self.rope_cos_sin(positions, B, x.dtype, x.device)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin

        k = repeat_kv(k, self.n_heads // self.n_kv_heads)
        v = repeat_kv(v, self.n_heads // self.n_kv_heads)

        attn = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        attn = attn.masked_fill(mask, torch.finfo(attn.dtype).min)
        attn = F.softmax(attn, dim=-1)
        out = torch.matmul(attn, v)
        out = out.transpose(1, 2).contiguous().view(B, T, -1)
        return self.W_o(out)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.size(1), device=x.device)
        h = x + self.attention(self.attn_norm(x), positions)
        return h + self.ffn(self.ffn_norm(h))
