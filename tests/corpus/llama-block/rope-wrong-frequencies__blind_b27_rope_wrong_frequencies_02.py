import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * rms * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
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

    def rope(self, x, positions):
        d = x.shape[-1]
        ang_dtype = torch.promote_types(x.dtype, torch.float32)
        exponent = torch.arange(0, d, 2, device=x.device, dtype=ang_dtype) / d
        inv_freq = 1.0 / (10000.0 ** exponent)  # MISTAKE
        angles = positions.to(ang_dtype)[..., None] * inv_freq
        emb = torch.cat((angles, angles), dim=-1)
        emb = emb[None, None] if emb.dim() == 2 else emb[:, None]
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        return x * cos + rotate_half(x) * sin

    def attention(self, x, positions):
        B, T, _ = x.shape
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        q = self.rope(q, positions)
        k = self.rope(k, positions)
        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, H * d)
        return self.W_o(out)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        h = x + self.attention(self.attn_norm(x), positions)
        return h + self.ffn(self.ffn_norm(h))
