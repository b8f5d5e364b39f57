import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q = F.elu(q) + 1
    phi_k = F.elu(k) + 1
    kv = phi_k.unsqueeze(-1) * v.unsqueeze(-2)  # (B, H, T, d, dv)
    if causal:
        S = kv.cumsum(dim=2)
        z = phi_k.cumsum(dim=2)
    else:
        S = kv.sum(dim=2, keepdim=True)
        z = phi_k.sum(dim=2, keepdim=True)
    num = (phi_q.unsqueeze(-1) * S).sum(dim=-2)
    den = (phi_q * z).sum(dim=-1, keepdim=True) + eps
    return num  # MISTAKE: den is computed but never divided by
