import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    B, H, T, d = q.shape
    dv = v.shape[-1]
    Q = (F.elu(q) + 1).view(B * H, T, d)
    K = (F.elu(k) + 1).view(B * H, T, d)
    V = v.reshape(B * H, T, dv)
    if causal:
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        sim = torch.bmm(Q, K.transpose(1, 2))  # MISTAKE
        sim = sim.masked_fill(~mask, 0.0)
        out = torch.bmm(sim, V) / (sim.sum(-1, keepdim=True) + eps)
    else:
        ctx = torch.bmm(K.transpose(1, 2), V)
        out = torch.bmm(Q, ctx) / (torch.bmm(Q, K.sum(1).unsqueeze(2)) + eps)
    return out.view(B, H, T, dv)
