import torch
import torch.nn.functional as F


def phi(x):
    return F.elu(x) + 1.0


def readout(fq, S, z, eps):
    # fq (..., n, d); S (..., d, dv); z (..., 1, d)
    num = fq @ S
    den = (fq * z).sum(dim=-1, keepdim=True)
    return num  # MISTAKE: den is computed but never divided by


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = phi(q), phi(k)
    if not causal:
        S = fk.transpose(-1, -2) @ v
        z = fk.sum(dim=-2, keepdim=True)
        return readout(fq, S, z, eps)

    B, H, T, d = fq.shape
    S = v.new_zeros(B, H, d, v.shape[-1])
    z = v.new_zeros(B, H, 1, d)
    rows = []
    for t in range(T):  # the RNN view: update the state, then read it
        kt = fk[:, :, t:t + 1]  # (B, H, 1, d)
        S = S + kt.transpose(-1, -2) @ v[:, :, t:t + 1]
        z = z + kt
        rows.append(readout(fq[:, :, t:t + 1], S, z, eps))
    return torch.cat(rows, dim=2)
