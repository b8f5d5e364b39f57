import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    # S = sum_j phi(k_j)^T v_j and z = sum_j phi(k_j)
    S = torch.einsum("bhtd,bhte->bhde", phi_k, v)  # MISTAKE: causal is never read, the sums run over every j
    z = phi_k.sum(dim=2)
    num = torch.einsum("bhtd,bhde->bhte", phi_q, S)
    den = torch.einsum("bhtd,bhd->bht", phi_q, z).unsqueeze(-1)
    return num / (den + eps)
