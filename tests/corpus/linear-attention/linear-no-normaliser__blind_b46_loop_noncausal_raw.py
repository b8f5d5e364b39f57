import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq = F.elu(q) + 1
    fk = F.elu(k) + 1
    B, H, T, d = fq.shape
    if not causal:
        S = fk.transpose(2, 3) @ v  # (B, H, d, dv)
        z = fk.sum(dim=2)
        return fq @ S  # MISTAKE
    S = torch.zeros(B, H, d, v.shape[-1], dtype=v.dtype, device=v.device)
    z = torch.zeros(B, H, d, dtype=v.dtype, device=v.device)
    rows = []
    for i in range(T):
        k_i = fk[:, :, i]
        S = S + k_i.unsqueeze(-1) @ v[:, :, i].unsqueeze(-2)
        z = z + k_i
        q_i = fq[:, :, i].unsqueeze(-2)  # (B, H, 1, d)
        rows.append((q_i @ S) / (q_i @ z.unsqueeze(-1) + eps))
    return torch.cat(rows, dim=2)
