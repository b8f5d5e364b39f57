"""Scores are multiplied by sqrt(d) instead of divided, and the causal mask is top-left aligned (j <= i) rather than bottom-right."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    batch, heads, len_q, dim = q.size()
    len_k = k.size(2)
    orig_dtype = q.dtype
    f = torch.promote_types(orig_dtype, torch.float32)
    q, k, v = q.to(f), k.to(f), v.to(f)
    temp = math.sqrt(dim)

    outputs = []
    for i0 in range(0, len_q, block_size):
        i1 = min(i0 + block_size, len_q)
        qi = q[:, :, i0:i1]
        mi = torch.full(qi.shape[:-1] + (1,), float("-inf"), dtype=f, device=q.device)
        li = torch.zeros(qi.shape[:-1] + (1,), dtype=f, device=q.device)
        oi = torch.zeros_like(qi)
        for j0 in range(0, len_k, block_size):
            j1 = min(j0 + block_size, len_k)
            if causal and j0 > i1 - 1:
                continue
            sij = qi @ k[:, :, j0:j1].transpose(-1, -2) * temp
            if causal:
                qpos = torch.arange(i0, i1, device=q.device).unsqueeze(-1)
                kpos = torch.arange(j0, j1, device=q.device).unsqueeze(0)
                sij = sij.masked_fill(kpos > qpos, float("-inf"))
            mij = sij.amax(-1, keepdim=True)
            m_new = torch.max(mi, mij)
            m_use = m_new.clone()
            m_use[m_use == float("-inf")] = 0.0
            pij = (sij - m_use).exp()
            scale_old = (mi - m_use).exp()
            li = scale_old * li + pij.sum(-1, keepdim=True)
            oi = scale_old * oi + pij @ v[:, :, j0:j1]
            mi = m_new
        li = li.masked_fill(li == 0, 1.0)
        outputs.append(oi / li)
    return torch.cat(outputs, dim=2).to(orig_dtype)
