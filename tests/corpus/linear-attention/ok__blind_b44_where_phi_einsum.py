import torch
import torch.nn.functional as F


def phi(x):
    return torch.where(x > 0, x + 1.0, torch.exp(x.clamp(max=0)))


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = phi(q), phi(k)
    if causal:
        kv = torch.einsum("bhtd,bhte->bhtde", fk, v).cumsum(dim=2)
        ksum = fk.cumsum(dim=2)
        num = torch.einsum("bhtd,bhtde->bhte", fq, kv)
        den = torch.einsum("bhtd,bhtd->bht", fq, ksum).unsqueeze(-1)
    else:
        kv = torch.einsum("bhtd,bhte->bhde", fk, v)
        ksum = fk.sum(dim=2)
        num = torch.einsum("bhtd,bhde->bhte", fq, kv)
        den = torch.einsum("bhtd,bhd->bht", fq, ksum).unsqueeze(-1)
    return num / (den + eps)
