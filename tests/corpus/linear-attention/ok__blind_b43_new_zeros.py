"""Linear attention whose causal running state starts from q.new_zeros(...) on the inputs' device and dtype; the non-causal form makes no helper tensor at all."""
import torch
import torch.nn.functional as F


def _phi(x):
    return F.elu(x) + 1


def linear_attention(q, k, v, causal: bool = False, eps: float = 1e-6):
    fq, fk = _phi(q), _phi(k)
    if not causal:
        S = fk.transpose(-2, -1) @ v  # (B, H, d, dv)
        z = fk.sum(dim=-2)  # (B, H, d)
        num = fq @ S
        den = (fq * z[..., None, :]).sum(dim=-1, keepdim=True)
        return num / (den + eps)
    B, H, T, d = q.shape
    dv = v.shape[-1]
    S = q.new_zeros(B, H, d, dv)
    z = q.new_zeros(B, H, d)
    outs = []
    for t in range(T):
        S = S + fk[:, :, t, :, None] * v[:, :, t, None, :]
        z = z + fk[:, :, t]
        num = (fq[:, :, t, :, None] * S).sum(dim=-2)
        den = (fq[:, :, t] * z).sum(dim=-1, keepdim=True)
        outs.append(num / (den + eps))
    return torch.stack(outs, dim=2)
