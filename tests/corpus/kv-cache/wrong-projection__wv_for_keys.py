"""Keys projected with W_v (then turned and cached); values also W_v."""

import torch
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.H, self.G = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, self.G * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, self.G * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def _rope(self, t, pos):
        half = self.hd // 2
        i = torch.arange(half, device=t.device, dtype=torch.float64)
        log_base = torch.log(torch.tensor(self.rope_base, dtype=torch.float64, device=t.device))
        theta = pos.double()[:, None] * torch.exp(-2.0 * i / self.hd * log_base)
        c, s = theta.cos().to(t.dtype), theta.sin().to(t.dtype)
        a, b = t[..., :half], t[..., half:]
        return torch.cat((a * c - b * s, a * s + b * c), -1)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, G, hd = self.H, self.G, self.hd
        T0 = 0 if cache is None else cache[0].size(-2)
        pos = T0 + torch.arange(T, device=x.device)
        q = self._rope(self.W_q(x).unflatten(-1, (H, hd)).permute(0, 2, 1, 3), pos)
        k = self._rope(self.W_v(x).unflatten(-1, (G, hd)).permute(0, 2, 1, 3), pos)
        v = self.W_v(x).unflatten(-1, (G, hd)).permute(0, 2, 1, 3)
        if cache is not None:
            k, v = torch.cat((cache[0], k), -2), torch.cat((cache[1], v), -2)
        qg = q.reshape(B, G, H // G, T, hd)  # query heads g*(H//G) .. share kv head g
        s = torch.einsum("bgrqd,bgkd->bgrqk", qg, k) * hd ** -0.5
        kpos = torch.arange(T0 + T, device=x.device)
        s = torch.where(kpos[None, :] <= pos[:, None], s, float("-inf"))
        p = torch.exp(s - s.amax(-1, keepdim=True))
        p = p / p.sum(-1, keepdim=True)
        y = torch.einsum("bgrqk,bgkd->bgrqd", p, v).reshape(B, H, T, hd)
        return self.W_o(y.permute(0, 2, 1, 3).flatten(2)), (k, v)
