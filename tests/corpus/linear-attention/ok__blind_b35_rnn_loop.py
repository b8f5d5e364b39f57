import torch
import torch.nn.functional as F


def phi(x):
    return F.elu(x) + 1.0


def linear_attention(q, k, v, causal=False, eps=1e-6):
    B, H, T, d = q.shape
    dv = v.shape[-1]
    fq, fk = phi(q), phi(k)
    if not causal:
        kv = fk.transpose(-2, -1) @ v             # (B, H, d, dv)
        z = fk.sum(dim=-2, keepdim=True)          # (B, H, 1, d)
        num = fq @ kv                             # (B, H, T, dv)
        den = (fq * z).sum(dim=-1, keepdim=True)  # (B, H, T, 1)
        return num / (den + eps)

    # the RNN view: a (d, dv) state and a (d,) normaliser updated step by step
    state = q.new_zeros(B, H, d, dv)
    norm = q.new_zeros(B, H, d)
    outs = []
    for t in range(T):
        kt, vt, qt = fk[:, :, t], v[:, :, t], fq[:, :, t]
        state = state + kt.unsqueeze(-1) * vt.unsqueeze(-2)
        norm = norm + kt
        num = (qt.unsqueeze(-2) @ state).squeeze(-2)
        den = (qt * norm).sum(-1, keepdim=True)
        outs.append(num / (den + eps))
    return torch.stack(outs, dim=2)
