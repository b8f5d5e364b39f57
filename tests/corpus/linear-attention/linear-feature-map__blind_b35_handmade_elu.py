import torch


def elu_plus_one(x):
    # elu(x) = x for x > 0, exp(x) - 1 otherwise; then + 1
    return torch.where(x > 0, x, torch.exp(x)) + 1  # MISTAKE


def linear_attention(q, k, v, causal=False, eps=1e-6):
    B, H, T, d = q.shape
    heads = []
    for h in range(H):
        fq = elu_plus_one(q[:, h])  # (B, T, d)
        fk = elu_plus_one(k[:, h])
        vh = v[:, h]
        if causal:
            kv = torch.cumsum(torch.einsum("btd,bte->btde", fk, vh), dim=1)
            z = torch.cumsum(fk, dim=1)
            num = torch.einsum("btd,btde->bte", fq, kv)
            den = torch.einsum("btd,btd->bt", fq, z)
        else:
            kv = torch.einsum("btd,bte->bde", fk, vh)
            z = fk.sum(1)
            num = torch.einsum("btd,bde->bte", fq, kv)
            den = torch.einsum("btd,bd->bt", fq, z)
        heads.append(num / (den.unsqueeze(-1) + eps))
    return torch.stack(heads, dim=1)
