import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    """Transformers are RNNs (Katharopoulos et al.), phi = elu + 1."""
    phi_q = F.elu(q) + 1.0
    phi_k = F.elu(k) + 1.0
    if not causal:
        kv = torch.einsum("bhnd,bhne->bhde", phi_k, v)
        k_sum = phi_k.sum(dim=2)  # (B, H, d)
        num = torch.einsum("bhnd,bhde->bhne", phi_q, kv)
        den = torch.einsum("bhnd,bhd->bhn", phi_q, k_sum)
    else:
        kv = torch.einsum("bhnd,bhne->bhnde", phi_k, v).cumsum(dim=2)  # running sum over j <= i
        k_sum = phi_k.sum(dim=2, keepdim=True)  # MISTAKE: normaliser sums every key, future ones too (no cumsum)
        num = torch.einsum("bhnd,bhnde->bhne", phi_q, kv)
        den = torch.einsum("bhnd,bhnd->bhn", phi_q, k_sum.expand_as(phi_q))
    return num / (den.unsqueeze(-1) + eps)
