import torch


def linear_attention(q, k, v, causal=False, eps=1e-6):
    # positive features so the normaliser stays > 0
    q, k = q.softmax(dim=-1), k.softmax(dim=-1)  # MISTAKE: softmax over features instead of elu(x) + 1
    if causal:
        kv = torch.einsum("bhsd,bhse->bhsde", k, v).cumsum(2)
        z = k.cumsum(2)
        num = torch.einsum("bhsd,bhsde->bhse", q, kv)
        den = torch.einsum("bhsd,bhsd->bhs", q, z)
    else:
        kv = torch.einsum("bhsd,bhse->bhde", k, v)
        z = k.sum(2)
        num = torch.einsum("bhsd,bhde->bhse", q, kv)
        den = torch.einsum("bhsd,bhd->bhs", q, z)
    return num / (den[..., None] + eps)
