import torch
import torch.nn.functional as F


def _prefix(x):
    """Running sum over the positions (dim 2)."""
    return torch.cumsum(x, dim=2) - x  # MISTAKE: exclusive prefix, leaves out j == i


def linear_attention(q, k, v, causal=False, eps=1e-6):
    qf = F.elu(q) + 1
    kf = F.elu(k) + 1
    if causal:
        kv = _prefix(torch.einsum("bhtd,bhte->bhtde", kf, v))
        z = _prefix(kf)
        num = torch.einsum("bhtd,bhtde->bhte", qf, kv)
        den = (qf * z).sum(-1)
    else:
        kv = torch.einsum("bhtd,bhte->bhde", kf, v)
        z = kf.sum(2)
        num = torch.einsum("bhtd,bhde->bhte", qf, kv)
        den = torch.einsum("bhtd,bhd->bht", qf, z)
    return num / (den.unsqueeze(-1) + eps)
