import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq = F.elu(q) + 1
    fk = F.elu(k) + 1
    kv = fk.unsqueeze(-1) * v.unsqueeze(-2)  # (B, H, T, d, dv)
    S = kv.cumsum(dim=2) if causal else kv.sum(dim=2, keepdim=True)
    z = fk.sum(dim=2, keepdim=True)  # MISTAKE: the normaliser sums over the whole sequence even when causal
    num = (fq.unsqueeze(-1) * S).sum(dim=-2)
    den = (fq * z).sum(dim=-1, keepdim=True)
    return num / (den + eps)
