import torch
import torch.nn.functional as F

BLOCK_SIZE = 16


def linear_attention(q, k, v, causal=False, eps=1e-6):
    phi_q = F.elu(q) + 1
    phi_k = F.elu(k) + 1
    if not causal:
        kv = phi_k.transpose(-2, -1) @ v
        z = phi_k.sum(dim=-2, keepdim=True).transpose(-2, -1)
        return (phi_q @ kv) / (phi_q @ z + eps)
    B, H, T, d = phi_q.shape
    C = max(1, min(BLOCK_SIZE, T // 2))
    kv = phi_q.new_zeros(B, H, d, v.shape[-1])
    z = phi_q.new_zeros(B, H, d, 1)
    chunks = []
    for s in range(0, T, C):
        qb, kb, vb = phi_q[:, :, s:s + C], phi_k[:, :, s:s + C], v[:, :, s:s + C]
        intra = torch.tril(qb @ kb.transpose(-2, -1), diagonal=-1)  # MISTAKE: strict triangle hides the diagonal j == i
        num = qb @ kv + intra @ vb
        den = qb @ z + intra.sum(dim=-1, keepdim=True)
        chunks.append(num / (den + eps))
        kv = kv + kb.transpose(-2, -1) @ vb
        z = z + kb.sum(dim=-2, keepdim=True).transpose(-2, -1)
    return torch.cat(chunks, dim=2)
