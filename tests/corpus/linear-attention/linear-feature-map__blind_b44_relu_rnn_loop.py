import torch
import torch.nn.functional as F


def feature(x):
    return F.relu(x)  # MISTAKE


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq = feature(q)
    fk = feature(k)
    B, H, T, d = fq.shape
    dv = v.shape[-1]
    if not causal:
        S = torch.matmul(fk.transpose(-2, -1), v)
        z = fk.sum(dim=-2, keepdim=True)
        num = torch.matmul(fq, S)
        den = torch.matmul(fq, z.transpose(-2, -1))
        return num / (den + eps)
    state = torch.zeros(B, H, d, dv, dtype=v.dtype, device=v.device)
    norm = torch.zeros(B, H, d, dtype=v.dtype, device=v.device)
    outs = []
    for t in range(T):
        state = state + fk[:, :, t, :, None] * v[:, :, t, None, :]
        norm = norm + fk[:, :, t]
        qt = fq[:, :, t]
        top = torch.einsum("bhd,bhde->bhe", qt, state)
        bottom = (qt * norm).sum(dim=-1, keepdim=True)
        outs.append(top / (bottom + eps))
    return torch.stack(outs, dim=2)
