import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        gate = torch.sigmoid(self.w1(x))  # MISTAKE
        up = self.w3(x)
        return self.w2(gate * up)


class LlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.D = d_model
        self.H = num_heads
        self.Hkv = num_kv_heads
        self.G = num_heads // num_kv_heads
        self.d = d_model // num_heads
        self.scale = self.d ** -0.5
        self.rope_base = rope_base

        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, self.Hkv * self.d, bias=False)
        self.W_v = nn.Linear(d_model, self.Hkv * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def rope_tables(self, positions, dtype):
        work = torch.float64 if dtype == torch.float64 else torch.float32
        i = torch.arange(self.d // 2, device=positions.device, dtype=work)
        inv_freq = self.rope_base ** (-2.0 * i / self.d)
        ang = positions.to(work)[..., None] * inv_freq  # (T, d/2) or (B, T, d/2)
        if ang.dim() == 3:
            ang = ang[:, None]  # (B, 1, T, d/2)
        return ang.cos().to(dtype), ang.sin().to(dtype)

    @staticmethod
    def rotate(t, cos, sin):
        half = t.shape[-1] // 2
        a, b = t[..., :half], t[..., half:]
        return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)

    def attention(self, x, positions):
        B, T, _ = x.shape
        q = self.W_q(x).view(B, T, self.H, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.Hkv, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.Hkv, self.d).transpose(1, 2)

        cos, sin = self.rope_tables(positions, x.dtype)
        q = self.rotate(q, cos, sin)
        k = self.rotate(k, cos, sin)

        # group query heads by the kv head they read: (B, Hkv, G, T, d)
        q = q.reshape(B, self.Hkv, self.G, T, self.d)
        scores = torch.einsum("bkgtd,bksd->bkgts", q, k) * self.scale
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        probs = F.softmax(scores, dim=-1)
        out = torch.einsum("bkgts,bksd->bkgtd", probs, v)
        out = out.reshape(B, self.H, T, self.d).transpose(1, 2).reshape(B, T, self.D)
        return self.W_o(out)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.size(1), device=x.device)
        h = x + self.attention(self.attn_norm(x), positions)
        out = h + self.ffn(self.ffn_norm(h))
        return out
