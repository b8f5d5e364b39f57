"""An RNN loop over time in the causal form."""

import torch
import torch.nn.functional as F


def phi(x):
    return F.elu(x) + 1


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq = phi(q)
    fk = phi(k)
    if causal:
        B, H, T, d = q.shape
        S = q.new_zeros(B, H, d, v.shape[-1])
        z = q.new_zeros(B, H, d)
        nums, dens = [], []
        for t in range(T):
            S = S + fk[:, :, t, :, None] * v[:, :, t, None, :]
            z = z + fk[:, :, t]
            nums.append(torch.einsum("bhd,bhde->bhe", fq[:, :, t], S))
            dens.append((fq[:, :, t] * z).sum(-1))
        num, den = torch.stack(nums, 2), torch.stack(dens, 2)
    else:
        S = torch.einsum("bhtd,bhte->bhde", fk, v)
        z = fk.sum(dim=2)
        num = torch.einsum("bhtd,bhde->bhte", fq, S)
        den = torch.einsum("bhtd,bhd->bht", fq, z)
    return num / (den.unsqueeze(-1) + eps)
