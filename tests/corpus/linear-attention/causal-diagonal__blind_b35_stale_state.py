import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    B, H, T, d = q.shape
    dv = v.shape[-1]
    q_ = F.elu(q) + 1
    k_ = F.elu(k) + 1
    if not causal:
        S = k_.transpose(2, 3) @ v
        z = k_.sum(2)
        return (q_ @ S) / ((q_ * z[:, :, None]).sum(-1, keepdim=True) + eps)

    S = torch.zeros(B, H, d, dv, dtype=q.dtype, device=q.device)
    z = torch.zeros(B, H, d, dtype=q.dtype, device=q.device)
    out = []
    for t in range(T):
        qt, kt, vt = q_[:, :, t], k_[:, :, t], v[:, :, t]
        S_next = S + kt[..., :, None] * vt[..., None, :]
        z_next = z + kt
        out.append((qt[:, :, None] @ S)[:, :, 0] / ((qt * z).sum(-1, keepdim=True) + eps))  # MISTAKE
        S, z = S_next, z_next
    return torch.stack(out, dim=2)
