"""Flash attention that walks the key blocks from the last one to the first (newest keys first, as the
candidate pictures a KV cache). The update has no guard for a row whose running max is still -inf.
Mistake: with a causal mask, the first block visited can be entirely in the future of early queries;
then the max is -inf, s - m_new is -inf - (-inf) = NaN and the NaN spreads through the row. Without
the mask, or when every row sees a key in the last block, the output is right."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = 1.0 / math.sqrt(d)
    m = torch.full((B, H, Tq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros(B, H, Tq, 1, dtype=q.dtype, device=q.device)
    acc = torch.zeros(B, H, Tq, d, dtype=q.dtype, device=q.device)
    last_visible = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    starts = list(range(0, Tk, block_size))
    for start in reversed(starts):
        end = min(start + block_size, Tk)
        s = q @ k[:, :, start:end].transpose(-2, -1) * scale
        if causal:
            s = s.masked_fill(torch.arange(start, end, device=q.device) > last_visible, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        p = torch.exp(s - m_new)  # MISTAKE
        alpha = torch.exp(m - m_new)
        l = alpha * l + p.sum(dim=-1, keepdim=True)
        acc = alpha * acc + p @ v[:, :, start:end]
        m = m_new
    return acc / l
