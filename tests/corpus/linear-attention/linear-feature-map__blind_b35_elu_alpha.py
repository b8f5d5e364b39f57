import torch
import torch.nn.functional as F


def phi(x):
    # elu(x) + 1 keeps the features positive
    return F.elu(x, 1.0)  # MISTAKE


def linear_attention(q, k, v, causal=False, eps=1e-6):
    pq, pk = phi(q), phi(k)
    if causal:
        S = torch.cumsum(pk[..., :, None] * v[..., None, :], dim=-3)  # (B, H, T, d, dv)
        z = torch.cumsum(pk, dim=-2)                                  # (B, H, T, d)
        num = (pq[..., None] * S).sum(dim=-2)
        den = (pq * z).sum(dim=-1, keepdim=True)
    else:
        S = pk.transpose(-1, -2) @ v
        z = pk.sum(dim=-2, keepdim=True)
        num = pq @ S
        den = (pq * z).sum(dim=-1, keepdim=True)
    return num / (den + eps)
