import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    q = F.elu(q) + 1
    k = F.elu(k) + 1
    if causal:
        A = torch.tril(q @ k.transpose(-2, -1))  # MISTAKE: a (T, T) matrix phi(q) phi(k)^T, masked
        return (A @ v) / (A.sum(dim=-1, keepdim=True) + eps)
    kv = k.transpose(-2, -1) @ v
    z = k.sum(dim=-2, keepdim=True)
    return (q @ kv) / ((q * z).sum(dim=-1, keepdim=True) + eps)
