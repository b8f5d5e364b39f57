import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q = F.elu(q) + 1
    phi_k = F.elu(k) + 1
    # a column of ones next to v: the same sums then give the normaliser
    v1 = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)
    kv = phi_k.unsqueeze(-1) * v1.unsqueeze(-2)  # (B, H, T, d, dv + 1)
    if causal:
        S = kv.cumsum(dim=2) - kv  # MISTAKE
    else:
        S = kv.sum(dim=2, keepdim=True)
    y = (phi_q.unsqueeze(-1) * S).sum(dim=-2)     # (B, H, T, dv + 1)
    return y[..., :-1] / (y[..., -1:] + eps)
