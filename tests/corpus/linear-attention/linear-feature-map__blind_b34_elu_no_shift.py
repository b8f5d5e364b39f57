import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    Q = F.elu(q)  # MISTAKE: elu without the + 1, features can be negative
    K = F.elu(k)
    B, H, T, d = Q.shape
    if not causal:
        S = torch.einsum("bhtd,bhte->bhde", K, v)
        z = K.sum(dim=2)
        return torch.einsum("bhtd,bhde->bhte", Q, S) / (torch.einsum("bhtd,bhd->bht", Q, z) + eps).unsqueeze(-1)
    S = Q.new_zeros(B, H, d, v.shape[-1])
    z = Q.new_zeros(B, H, d)
    out = []
    for i in range(T):
        S = S + torch.einsum("bhd,bhe->bhde", K[:, :, i], v[:, :, i])
        z = z + K[:, :, i]
        num = torch.einsum("bhd,bhde->bhe", Q[:, :, i], S)
        den = torch.einsum("bhd,bhd->bh", Q[:, :, i], z)
        out.append(num / (den.unsqueeze(-1) + eps))
    return torch.stack(out, dim=2)
