import math

import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq = F.elu(q) + 1
    fk = F.elu(k) + 1
    B, H, T, d = q.shape
    dv = v.size(-1)
    if not causal:
        S = torch.einsum("bhtd,bhte->bhde", fk, v)
        z = fk.sum(2)
        return torch.einsum("bhtd,bhde->bhte", fq, S) / (torch.einsum("bhtd,bhd->bht", fq, z)[..., None] + eps)
    chunk = max(1, int(math.sqrt(T)))
    S = q.new_zeros(B, H, d, dv)
    z = q.new_zeros(B, H, d)
    pieces = []
    for start in range(0, T, chunk):
        qc = fq[:, :, start:start + chunk]
        kc = fk[:, :, start:start + chunk]
        vc = v[:, :, start:start + chunk]
        local = qc @ kc.transpose(-1, -2)  # MISTAKE
        num = qc @ S + local @ vc
        den = qc @ z.unsqueeze(-1) + local.sum(-1, keepdim=True)
        pieces.append(num / (den + eps))
        S = S + kc.transpose(-1, -2) @ vc
        z = z + kc.sum(2)
    return torch.cat(pieces, dim=2)
