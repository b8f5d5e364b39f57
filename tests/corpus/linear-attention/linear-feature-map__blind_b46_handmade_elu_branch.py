import torch


def feature_map(x):
    return torch.where(x > 0, x + 1, torch.exp(x) - 1)  # MISTAKE


def linear_attention(q, k, v, causal=False, eps=1e-6):
    Fq, Fk = feature_map(q), feature_map(k)
    if causal:
        S = torch.einsum("bhtd,bhte->bhtde", Fk, v).cumsum(2)
        z = Fk.cumsum(2)
        num = torch.einsum("bhtd,bhtde->bhte", Fq, S)
        den = torch.einsum("bhtd,bhtd->bht", Fq, z)
    else:
        S = torch.einsum("bhtd,bhte->bhde", Fk, v)
        z = Fk.sum(2)
        num = torch.einsum("bhtd,bhde->bhte", Fq, S)
        den = torch.einsum("bhtd,bhd->bht", Fq, z)
    return num / (den[..., None] + eps)
