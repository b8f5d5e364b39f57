import torch
import torch.nn.functional as F


def _phi(t):
    return F.elu(t) + 1.0


def _kv_sums(fk, v, causal):
    if causal:
        S = torch.cumsum(torch.einsum("bhtd,bhte->bhtde", fk, v), dim=2)
        z = fk.sum(dim=2, keepdim=True)  # MISTAKE
    else:
        S = torch.einsum("bhtd,bhte->bhde", fk, v).unsqueeze(2)
        z = fk.sum(dim=2, keepdim=True)
    return S, z


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = _phi(q), _phi(k)
    S, z = _kv_sums(fk, v, causal)
    num = torch.einsum("bhtd,bhtde->bhte", fq, S.expand(-1, -1, fq.shape[2], -1, -1))
    den = (fq * z).sum(dim=-1, keepdim=True)
    return num / (den + eps)
