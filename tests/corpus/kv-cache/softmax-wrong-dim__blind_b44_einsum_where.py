import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rope_rotate(x, cos, sin):
    half = x.size(-1) // 2
    x_lo, x_hi = x[..., :half], x[..., half:]
    return torch.cat([x_lo * cos - x_hi * sin, x_hi * cos + x_lo * sin], dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.n_head = num_heads
        self.n_kv_head = num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        hd = self.head_dim
        offset = 0 if cache is None else cache[0].shape[2]

        q = self.W_q(x).view(B, T, self.n_head, hd).permute(0, 2, 1, 3)
        k = self.W_k(x).view(B, T, self.n_kv_head, hd).permute(0, 2, 1, 3)
        v = self.W_v(x).view(B, T, self.n_kv_head, hd).permute(0, 2, 1, 3)

        fdt = torch.float64 if x.dtype == torch.float64 else torch.float32
        idx = torch.arange(0, hd, 2, device=x.device, dtype=fdt)
        inv_freq = torch.exp(idx * (-math.log(self.rope_base) / hd))
        t = torch.arange(offset, offset + T, device=x.device, dtype=fdt)
        freqs = torch.einsum("t,f->tf", t, inv_freq)
        cos, sin = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
        q = rope_rotate(q, cos, sin)
        k = rope_rotate(k, cos, sin)

        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        S = k.shape[2]

        g = self.n_head // self.n_kv_head
        qg = q.view(B, self.n_kv_head, g, T, hd)
        scores = torch.einsum("bkgtd,bksd->bkgts", qg, k) / math.sqrt(hd)
        q_pos = torch.arange(offset, offset + T, device=x.device)
        k_pos = torch.arange(S, device=x.device)
        visible = k_pos[None, :] <= q_pos[:, None]
        scores = torch.where(visible, scores, torch.tensor(float("-inf"), dtype=scores.dtype, device=x.device))
        probs = F.softmax(scores, dim=-2)  # MISTAKE
        out = torch.einsum("bkgts,bksd->bkgtd", probs, v)
        out = out.reshape(B, self.n_head, T, hd).transpose(1, 2).reshape(B, T, C)
        return self.W_o(out), (k, v)
