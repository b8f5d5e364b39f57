import torch
import torch.nn.functional as F


def phi(t):
    return F.elu(t) + 1


def linear_attention(q, k, v, causal=False, eps=1e-6):
    B, H, T, d = q.shape
    dv = v.shape[-1]
    fq = phi(q).reshape(B * H, T, d)
    fk = phi(k).reshape(B * H, T, d)
    vv = v.reshape(B * H, T, dv)
    if causal:
        S = torch.cumsum(fk.unsqueeze(-1) * vv.unsqueeze(-2), dim=1)  # (BH, T, d, dv)
        num = torch.matmul(fq.unsqueeze(-2), S).squeeze(-2)          # (BH, T, dv)
        z = fk.sum(dim=1, keepdim=True)  # MISTAKE
    else:
        num = torch.bmm(fq, torch.bmm(fk.transpose(1, 2), vv))
        z = fk.sum(dim=1, keepdim=True)
    den = (fq * z).sum(-1, keepdim=True)
    return (num / (den + eps)).reshape(B, H, T, dv)
