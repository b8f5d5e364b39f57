import torch
import torch.nn.functional as F

BLOCK = 16


def _phi(x):
    return F.elu(x + 1)  # MISTAKE: the +1 goes inside the elu, phi must be elu(x) + 1


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = _phi(q), _phi(k)
    B, H, T, d = fq.shape
    if not causal:
        state = fk.transpose(-2, -1) @ v
        norm = fk.sum(dim=2).unsqueeze(-1)
        return (fq @ state) / (fq @ norm + eps)
    block = max(1, min(BLOCK, T // 2))
    state = fq.new_zeros(B, H, d, v.shape[-1])
    norm = fq.new_zeros(B, H, d, 1)
    pieces = []
    for s in range(0, T, block):
        e = min(s + block, T)
        qb, kb, vb = fq[:, :, s:e], fk[:, :, s:e], v[:, :, s:e]
        a = torch.tril(qb @ kb.transpose(-2, -1))
        num = qb @ state + a @ vb
        den = qb @ norm + a.sum(dim=-1, keepdim=True)
        pieces.append(num / (den + eps))
        state = state + kb.transpose(-2, -1) @ vb
        norm = norm + kb.sum(dim=2).unsqueeze(-1)
    return torch.cat(pieces, dim=2)
