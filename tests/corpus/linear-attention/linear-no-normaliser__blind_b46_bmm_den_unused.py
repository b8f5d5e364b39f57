import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    B, H, T, d = q.shape
    dv = v.shape[-1]
    fq = (F.elu(q) + 1).reshape(B * H, T, d)
    fk = (F.elu(k) + 1).reshape(B * H, T, d)
    vv = v.reshape(B * H, T, dv)
    if causal:
        S = torch.cumsum(fk.unsqueeze(-1) * vv.unsqueeze(-2), dim=1)  # (BH, T, d, dv)
        z = torch.cumsum(fk, dim=1)  # (BH, T, d)
        num = torch.bmm(fq.reshape(B * H * T, 1, d), S.reshape(B * H * T, d, dv)).reshape(B * H, T, dv)
        den = (fq * z).sum(-1, keepdim=True)
    else:
        S = torch.bmm(fk.transpose(1, 2), vv)  # (BH, d, dv)
        z = fk.sum(1, keepdim=True)  # (BH, 1, d)
        num = torch.bmm(fq, S)
        den = torch.bmm(fq, z.transpose(1, 2))  # (BH, T, 1)
    out = num  # MISTAKE
    return out.reshape(B, H, T, dv)
