import torch
import torch.nn.functional as F


def phi(x):
    return F.elu(x) + 1


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = phi(q), phi(k)
    T = q.shape[2]
    if not causal:
        S = torch.einsum("bhjd,bhje->bhde", fk, v)
        z = fk.sum(dim=2)
        out = torch.einsum("bhid,bhde->bhie", fq, S)
        den = torch.einsum("bhid,bhd->bhi", fq, z)
        return out / (den.unsqueeze(-1) + eps)
    w = torch.einsum("bhid,bhjd->bhij", fq, fk)  # MISTAKE: builds the full (T, T) weights, then masks them
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    w = w.masked_fill(future, 0.0)
    out = torch.einsum("bhij,bhje->bhie", w, v)
    return out / (w.sum(dim=-1).unsqueeze(-1) + eps)
