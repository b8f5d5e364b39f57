import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q = F.elu(q) + 1
    phi_k = F.elu(k) + 1
    if causal:
        A = torch.einsum("bhid,bhjd->bhij", phi_q, phi_k).tril()  # MISTAKE
        num = A @ v
        den = A.sum(dim=-1, keepdim=True)
    else:
        kv = torch.einsum("bhjd,bhje->bhde", phi_k, v)
        num = torch.einsum("bhid,bhde->bhie", phi_q, kv)
        den = (phi_q * phi_k.sum(dim=2, keepdim=True)).sum(dim=-1, keepdim=True)
    return num / (den + eps)
