import torch
import torch.nn.functional as F


def feature(x):
    return F.elu(x) + 1


def linear_attention(q, k, v, causal=False, eps=1e-6):
    Q, K = feature(q), feature(k)
    if not causal:
        S = K.transpose(-2, -1) @ v
        z = K.sum(dim=2)
        return (Q @ S) / ((Q * z.unsqueeze(2)).sum(-1, keepdim=True) + eps)
    B, H, T, d = Q.shape
    S = Q.new_zeros(B, H, d, v.shape[-1])
    z = Q.new_zeros(B, H, d)
    outs = []
    for t in range(T):
        S = S + K[:, :, t, :, None] * v[:, :, t, None, :]
        z = z + K[:, :, t]
        outs.append((Q[:, :, t, :, None] * S).sum(dim=2))  # MISTAKE: the normaliser phi(q_t) . z is never applied
    return torch.stack(outs, dim=2)
