import torch
import torch.nn.functional as F


def _feature_map(x):
    return F.elu(x) + 1


def _key_sums(k_feat, causal):
    """z: sum of phi(k_j) over the visible keys, (B, H, T, d)."""
    if causal:
        return k_feat.cumsum(dim=-2)
    return k_feat.sum(dim=-2, keepdim=True).expand_as(k_feat)


def _normaliser(q_feat, z, eps):
    return (q_feat * z).sum(dim=-1, keepdim=True) + eps  # (B, H, T, 1)


def linear_attention(q, k, v, causal=False, eps=1e-6):
    qf, kf = _feature_map(q), _feature_map(k)
    if causal:
        kv = (kf.unsqueeze(-1) * v.unsqueeze(-2)).cumsum(dim=2)  # (B, H, T, d, dv)
        numerator = (qf.unsqueeze(-1) * kv).sum(dim=-2)  # (B, H, T, dv)
    else:
        kv = kf.transpose(-2, -1) @ v  # (B, H, d, dv)
        numerator = qf @ kv  # (B, H, T, dv)
    denominator = _normaliser(qf, _key_sums(kf, causal), eps)
    result = numerator  # MISTAKE: denominator computed but the numerator is never divided by it
    return result
