import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    Q = F.elu(q) + 1
    K = F.elu(k) + 1
    KV = torch.einsum("bhtd,bhte->bhde", K, v)
    Z = K.sum(dim=2)
    if causal:
        KV_prefix = torch.einsum("bhtd,bhte->bhtde", K, v).cumsum(dim=2)
        Z_prefix = K.cumsum(dim=2)
        num = torch.einsum("bhtd,bhde->bhte", Q, KV)  # MISTAKE
        den = torch.einsum("bhtd,bhtd->bht", Q, Z_prefix)
    else:
        num = torch.einsum("bhtd,bhde->bhte", Q, KV)
        den = torch.einsum("bhtd,bhd->bht", Q, Z)
    return num / (den[..., None] + eps)
