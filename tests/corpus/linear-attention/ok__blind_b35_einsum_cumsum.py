import torch
import torch.nn.functional as F


def elu_feature_map(x):
    return F.elu(x) + 1


def linear_attention(q, k, v, causal=False, eps=1e-6):
    Q = elu_feature_map(q)
    K = elu_feature_map(k)
    if causal:
        # running sums over positions: S_i = sum_{j<=i} phi(k_j)^T v_j
        KV = torch.einsum("bhtd,bhte->bhtde", K, v).cumsum(dim=2)
        Z = K.cumsum(dim=2)
        num = torch.einsum("bhtd,bhtde->bhte", Q, KV)
        den = torch.einsum("bhtd,bhtd->bht", Q, Z)
    else:
        KV = torch.einsum("bhsd,bhse->bhde", K, v)
        Z = K.sum(dim=2)
        num = torch.einsum("bhtd,bhde->bhte", Q, KV)
        den = torch.einsum("bhtd,bhd->bht", Q, Z)
    return num / (den.unsqueeze(-1) + eps)
