"""Future keys get their scores set to 0 with masked_fill(..., 0.0) instead of -inf, so they keep weight in the softmax."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    dtype = q.dtype
    acc_dtype = torch.promote_types(dtype, torch.float32)
    q = q.to(acc_dtype)
    k = k.to(acc_dtype)
    v = v.to(acc_dtype)
    sm_scale = d ** -0.5

    result = torch.empty(B, H, Tq, d, dtype=acc_dtype, device=q.device)
    for qs in range(0, Tq, block_size):
        qe = min(Tq, qs + block_size)
        q_blk = q[:, :, qs:qe] * sm_scale
        m = torch.full((B, H, qe - qs, 1), -math.inf, dtype=acc_dtype, device=q.device)
        l = torch.zeros((B, H, qe - qs, 1), dtype=acc_dtype, device=q.device)
        o = torch.zeros((B, H, qe - qs, d), dtype=acc_dtype, device=q.device)
        for ks in range(0, Tk, block_size):
            ke = min(Tk, ks + block_size)
            s = q_blk @ k[:, :, ks:ke].transpose(-1, -2)
            if causal:
                qi = torch.arange(qs, qe, device=q.device)[:, None] + (Tk - Tq)
                kj = torch.arange(ks, ke, device=q.device)[None, :]
                s = s.masked_fill(kj > qi, 0.0)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l = alpha * l + p.sum(-1, keepdim=True)
            o = alpha * o + p @ v[:, :, ks:ke]
            m = m_new
        result[:, :, qs:qe] = o / l
    return result.to(dtype)
