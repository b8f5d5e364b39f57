"""Linear attention that fills its result row by row into a torch.zeros buffer made without device=, so CUDA inputs give a CPU output."""
import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal: bool = False, eps: float = 1e-6):
    B, H, T, d = q.shape
    dv = v.shape[-1]
    fq = F.elu(q) + 1
    fk = F.elu(k) + 1
    out = torch.zeros(B, H, T, dv, dtype=v.dtype)  # CPU buffer
    if causal:
        S = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=2)  # (B, H, T, d, dv)
        z = torch.cumsum(fk, dim=2)  # (B, H, T, d)
        for t in range(T):
            num = torch.einsum("bhd,bhde->bhe", fq[:, :, t], S[:, :, t])
            den = (fq[:, :, t] * z[:, :, t]).sum(-1, keepdim=True) + eps
            out[:, :, t] = num / den
    else:
        S = fk.transpose(-2, -1) @ v  # (B, H, d, dv)
        z = fk.sum(dim=2)  # (B, H, d)
        for t in range(T):
            num = torch.einsum("bhd,bhde->bhe", fq[:, :, t], S)
            den = (fq[:, :, t] * z).sum(-1, keepdim=True) + eps
            out[:, :, t] = num / den
    return out
