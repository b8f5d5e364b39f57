import torch


def linear_attention(q, k, v, causal=False, eps=1e-6):
    Q = torch.relu(q)  # MISTAKE: ReLU feature map instead of elu(x) + 1
    K = torch.relu(k)
    if not causal:
        KV = K.transpose(-2, -1) @ v
        Z = K.sum(dim=-2).unsqueeze(-1)
        return (Q @ KV) / (Q @ Z + eps)
    KV = torch.einsum("bhtd,bhte->bhtde", K, v).cumsum(dim=2)
    Z = K.cumsum(dim=2)
    num = torch.einsum("bhtd,bhtde->bhte", Q, KV)
    den = (Q * Z).sum(dim=-1, keepdim=True)
    return num / (den + eps)
