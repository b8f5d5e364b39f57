"""Linear attention (Katharopoulos et al., 2020, "Transformers are RNNs"): a model answer.

Softmax attention compares every query with every key: O(T^2). Replace exp(q . k) by a product of feature maps,
phi(q) . phi(k) with phi(x) = elu(x) + 1 (positive, so the weights stay positive), and the sum over keys factors:
sum_j (phi(q_i) . phi(k_j)) v_j = phi(q_i) . (sum_j phi(k_j)^T v_j). The bracket is one (d, dv) matrix for all
queries, O(T d dv) in all. Causal, the sums run over j <= i: a running sum, which is what makes it an RNN.
"""

import torch
import torch.nn.functional as F


def feature_map(x):
    return F.elu(x) + 1  # > 0 everywhere: every weight phi(q).phi(k) is positive, as exp's would be


def linear_attention(q, k, v, causal=False, eps=1e-6):
    """q, k (B, H, T, d); v (B, H, T, dv). Returns (B, H, T, dv)."""
    fq, fk = feature_map(q), feature_map(k)  # (B, H, T, d)
    if not causal:
        S = fk.transpose(-2, -1) @ v  # (B, H, d, dv): sum_j phi(k_j)^T v_j, shared by every query
        z = fk.sum(dim=-2)  # (B, H, d): sum_j phi(k_j), for the normaliser
        num = fq @ S  # (B, H, T, dv)
        den = fq @ z[..., None]  # (B, H, T, 1): phi(q_i) . z
    else:
        # causal: the sums over j <= i, as running sums along time; (T, d, dv) per head, never a (T, T) matrix
        S = torch.cumsum(fk[..., :, None] * v[..., None, :], dim=-3)  # (B, H, T, d, dv): sum_{j<=i} phi(k_j)^T v_j
        z = torch.cumsum(fk, dim=-2)  # (B, H, T, d)
        num = (fq[..., None] * S).sum(dim=-2)  # (B, H, T, dv): phi(q_i) S_i
        den = (fq * z).sum(dim=-1, keepdim=True)  # (B, H, T, 1): phi(q_i) . z_i
    out = num / (den + eps)  # (B, H, T, dv): query i's weights phi(q_i) . phi(k_j) / den_i sum to 1
    return out
