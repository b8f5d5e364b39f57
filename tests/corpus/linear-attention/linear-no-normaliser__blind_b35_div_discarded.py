import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    B, H, T, d = q.shape
    dv = v.shape[-1]
    Q = (F.elu(q) + 1).flatten(0, 1)  # (B*H, T, d)
    K = (F.elu(k) + 1).flatten(0, 1)
    V = v.flatten(0, 1)               # (B*H, T, dv)
    if causal:
        KV = (K.unsqueeze(-1) * V.unsqueeze(-2)).cumsum(dim=1)  # (B*H, T, d, dv)
        Z = K.cumsum(dim=1)                                     # (B*H, T, d)
        out = torch.matmul(Q.unsqueeze(2), KV).squeeze(2)
        den = (Q * Z).sum(-1, keepdim=True)
    else:
        KV = torch.bmm(K.transpose(1, 2), V)                    # (B*H, d, dv)
        out = torch.bmm(Q, KV)
        den = torch.bmm(Q, K.sum(1).unsqueeze(-1))              # (B*H, T, 1)
    out.div(den + eps)  # MISTAKE
    return out.view(B, H, T, dv)
