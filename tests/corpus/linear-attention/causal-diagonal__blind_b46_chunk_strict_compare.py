import math

import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    if not causal:
        S = fk.transpose(-1, -2) @ v
        z = fk.sum(-2)
        return (fq @ S) / ((fq * z[..., None, :]).sum(-1, keepdim=True) + eps)
    B, H, T, d = q.shape
    dv = v.shape[-1]
    C = max(1, math.isqrt(T))
    S = torch.zeros(B, H, d, dv, dtype=q.dtype, device=q.device)
    z = torch.zeros(B, H, 1, d, dtype=q.dtype, device=q.device)
    chunks = []
    for s in range(0, T, C):
        e = min(s + C, T)
        qc, kc, vc = fq[:, :, s:e], fk[:, :, s:e], v[:, :, s:e]
        idx = torch.arange(e - s, device=q.device)
        mask = idx[:, None] > idx[None, :]  # MISTAKE
        A = (qc @ kc.transpose(-1, -2)) * mask.to(q.dtype)
        num = qc @ S + A @ vc
        den = (qc * z).sum(-1, keepdim=True) + A.sum(-1, keepdim=True)
        chunks.append(num / (den + eps))
        S = S + kc.transpose(-1, -2) @ vc
        z = z + kc.sum(-2, keepdim=True)
    return torch.cat(chunks, dim=2)
