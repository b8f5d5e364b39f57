import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q = F.elu(q) + 1
    phi_k = F.elu(k) + 1
    # one outer product phi(k_j)^T v_j per position: (B, H, T, d, dv)
    kv = phi_k.unsqueeze(-1) * v.unsqueeze(-2)
    if causal:
        S = torch.cumsum(kv, dim=2)
        z = torch.cumsum(phi_k, dim=2)
    else:
        S = kv.sum(dim=2, keepdim=True)
        z = phi_k.sum(dim=2, keepdim=True)
    num = (phi_q.unsqueeze(-1) * S).sum(dim=-2)  # (B, H, T, dv)
    den = (phi_q * z).sum(dim=-1, keepdim=True)  # (B, H, T, 1)
    return num / (den + eps)
