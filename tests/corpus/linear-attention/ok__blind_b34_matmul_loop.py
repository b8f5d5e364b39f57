import torch
from torch.nn import functional as F


def feature_map(x: torch.Tensor) -> torch.Tensor:
    return F.elu(x) + 1


def linear_attention(q, k, v, causal=False, eps=1e-6):
    Q = feature_map(q)  # (B, H, T, d)
    K = feature_map(k)
    if not causal:
        KV = K.transpose(-2, -1) @ v  # phi(K)^T V: (B, H, d, dv)
        Z = K.sum(dim=-2, keepdim=True).transpose(-2, -1)  # (B, H, d, 1)
        return (Q @ KV) / (Q @ Z + eps)

    B, H, T, d = Q.shape
    dv = v.shape[-1]
    KV = torch.zeros(B, H, d, dv, dtype=v.dtype, device=v.device)
    Z = torch.zeros(B, H, d, 1, dtype=v.dtype, device=v.device)
    outs = []
    for t in range(T):
        Kt = K[:, :, t:t + 1].transpose(-2, -1)  # (B, H, d, 1)
        KV = KV + Kt @ v[:, :, t:t + 1]
        Z = Z + Kt
        Qt = Q[:, :, t:t + 1]  # (B, H, 1, d)
        outs.append((Qt @ KV) / (Qt @ Z + eps))
    return torch.cat(outs, dim=2)
