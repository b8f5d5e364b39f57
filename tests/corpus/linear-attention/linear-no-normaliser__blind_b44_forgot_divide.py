import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    q_feat = F.elu(q) + 1
    k_feat = F.elu(k) + 1
    if causal:
        outer = k_feat.unsqueeze(-1) * v.unsqueeze(-2)
        S = outer.cumsum(dim=2)
        z = k_feat.cumsum(dim=2)
        num = (q_feat.unsqueeze(-1) * S).sum(dim=-2)
    else:
        S = torch.einsum("bhtd,bhte->bhde", k_feat, v)
        z = k_feat.sum(dim=2, keepdim=True)
        num = q_feat @ S
    norm = (q_feat * z).sum(dim=-1, keepdim=True) + eps
    out = num  # MISTAKE
    return out
