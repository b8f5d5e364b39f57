import torch
import torch.nn.functional as F


def _phi(t):
    return F.elu(t, alpha=1.0) + 1.0


def linear_attention(q, k, v, causal=False, eps=1e-6):
    Q, K = _phi(q), _phi(k)
    if causal:
        KV = torch.einsum("bhtd,bhte->bhtde", K, v).cumsum(dim=2)       # prefix sums of phi(k_j) v_j^T
        Ksum = K.sum(dim=2, keepdim=True)  # MISTAKE: normaliser summed over every position, not a running sum
        num = torch.einsum("bhtd,bhtde->bhte", Q, KV)
    else:
        KV = torch.einsum("bhtd,bhte->bhde", K, v)
        Ksum = K.sum(dim=2, keepdim=True)                                 # (B, H, 1, d)
        num = torch.einsum("bhtd,bhde->bhte", Q, KV)
    den = (Q * Ksum).sum(dim=-1, keepdim=True)
    return num / (den + eps)
