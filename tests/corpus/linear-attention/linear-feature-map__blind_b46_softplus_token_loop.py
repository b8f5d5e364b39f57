import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q, phi_k = F.softplus(q), F.softplus(k)  # MISTAKE
    T = q.shape[2]
    out = []
    if not causal:
        kv = torch.einsum("bhjd,bhje->bhde", phi_k, v)
        k_tot = phi_k.sum(dim=2)
    else:
        kv = torch.zeros(q.shape[0], q.shape[1], q.shape[3], v.shape[3], dtype=q.dtype, device=q.device)
        k_tot = torch.zeros_like(q[:, :, 0])
    for i in range(T):
        if causal:
            kv = kv + torch.einsum("bhd,bhe->bhde", phi_k[:, :, i], v[:, :, i])
            k_tot = k_tot + phi_k[:, :, i]
        numer = torch.einsum("bhd,bhde->bhe", phi_q[:, :, i], kv)
        denom = (phi_q[:, :, i] * k_tot).sum(-1, keepdim=True)
        out.append(numer / (denom + eps))
    return torch.stack(out, dim=2)
