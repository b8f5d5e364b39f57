import torch
import torch.nn.functional as F


def phi(x):
    return F.elu(x) + 1.0


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = phi(q), phi(k)  # (B, H, T, d)
    if not causal:
        kv = torch.einsum("bhtd,bhte->bhde", fk, v)  # (B, H, d, dv)
        ksum = fk.sum(dim=2)  # (B, H, d)
        num = torch.einsum("bhtd,bhde->bhte", fq, kv)
        den = torch.einsum("bhtd,bhd->bht", fq, ksum).unsqueeze(-1)
        return num / (den + eps)
    # causal: the RNN view, one state update per time step
    B, H, T, d = q.shape
    dv = v.shape[-1]
    S = torch.zeros(B, H, d, dv, dtype=q.dtype, device=q.device)
    z = torch.zeros(B, H, d, dtype=q.dtype, device=q.device)
    outs = []
    for t in range(T):
        S = S + fk[:, :, t, :, None] * v[:, :, t, None, :]
        z = z + fk[:, :, t]
        qt = fq[:, :, t]  # (B, H, d)
        num = torch.einsum("bhd,bhde->bhe", qt, S)
        den = (qt * z).sum(dim=-1, keepdim=True)
        outs.append(num / (den + eps))
    return torch.stack(outs, dim=2)
