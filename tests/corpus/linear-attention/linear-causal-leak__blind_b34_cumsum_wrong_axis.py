import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq = F.elu(q) + 1
    fk = F.elu(k) + 1
    S = torch.einsum("bhtd,bhte->bhde", fk, v)  # (B, H, d, dv)
    z = fk.sum(dim=2)  # (B, H, d)
    if causal:
        S, z = S.cumsum(dim=2), z.cumsum(dim=2)  # MISTAKE: cumsum on axis 2 of the reduced state (d, not t): every j still counted
    num = torch.einsum("bhtd,bhde->bhte", fq, S)
    den = torch.einsum("bhtd,bhd->bht", fq, z)
    return num / (den.unsqueeze(-1) + eps)
