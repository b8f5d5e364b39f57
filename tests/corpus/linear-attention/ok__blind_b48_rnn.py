import torch
import torch.nn.functional as F


def elu_feature_map(x):
    return F.elu(x) + 1


def linear_attention(q, k, v, causal=False, eps=1e-6):
    in_dtype = q.dtype
    work = torch.promote_types(in_dtype, torch.float32)
    Q = elu_feature_map(q.to(work))
    K = elu_feature_map(k.to(work))
    V = v.to(work)
    B, H, T, d = Q.shape
    if not causal:
        S = torch.einsum("bhtd,bhte->bhde", K, V)
        z = K.sum(dim=2)
        num = torch.einsum("bhtd,bhde->bhte", Q, S)
        den = torch.einsum("bhtd,bhd->bht", Q, z).unsqueeze(-1)
        return (num / (den + eps)).to(in_dtype)
    # causal: recurrent form, one token at a time
    S = torch.zeros(B, H, d, V.shape[-1], dtype=work, device=q.device)
    z = torch.zeros(B, H, d, dtype=work, device=q.device)
    outs = []
    for i in range(T):
        S = S + torch.einsum("bhd,bhe->bhde", K[:, :, i], V[:, :, i])
        z = z + K[:, :, i]
        num_i = torch.einsum("bhd,bhde->bhe", Q[:, :, i], S)
        den_i = (Q[:, :, i] * z).sum(-1, keepdim=True)
        outs.append(num_i / (den_i + eps))
    return torch.stack(outs, dim=2).to(in_dtype)
