import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    Q = F.elu(q) + 1
    K = F.elu(k) + 1
    if causal:
        kv = torch.einsum("bhtd,bhte->bhtde", K, v)
        S = kv.cumsum(dim=2)  # (B, H, T, d, dv): prefix sums
        z = K.cumsum(dim=2)  # (B, H, T, d)
        num = torch.einsum("bhtd,bhsde->bhte", Q, S)  # MISTAKE
        den = torch.einsum("bhtd,bhtd->bht", Q, z)
    else:
        S = torch.einsum("bhtd,bhte->bhde", K, v)
        z = K.sum(dim=2)
        num = torch.einsum("bhtd,bhde->bhte", Q, S)
        den = torch.einsum("bhtd,bhd->bht", Q, z)
    return num / (den.unsqueeze(-1) + eps)
