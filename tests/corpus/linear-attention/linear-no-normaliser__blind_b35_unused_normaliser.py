import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    q = F.elu(q) + 1
    k = F.elu(k) + 1
    if causal:
        kv = torch.einsum("bhnd,bhne->bhnde", k, v).cumsum(2)
        k_cum = k.cumsum(2)
        out = torch.einsum("bhnd,bhnde->bhne", q, kv)
        normaliser = 1.0 / (torch.einsum("bhnd,bhnd->bhn", q, k_cum) + eps)
    else:
        kv = torch.einsum("bhnd,bhne->bhde", k, v)
        out = torch.einsum("bhnd,bhde->bhne", q, kv)
        normaliser = 1.0 / (torch.einsum("bhnd,bhd->bhn", q, k.sum(2)) + eps)
    return out  # MISTAKE
