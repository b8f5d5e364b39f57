import math

import torch


def _gather(cache, block_table):
    """All the tokens a table can address, in order: (B, max_blocks * block_size, Hkv, d)."""
    B, M = block_table.shape
    _, bs, Hkv, d = cache.shape
    blocks = cache[block_table]  # (B, M, bs, Hkv, d)
    return blocks.transpose(1, 2).reshape(B, M * bs, Hkv, d)  # MISTAKE


def _expand_kv(x, group):
    B, L, Hkv, d = x.shape
    return x[:, :, :, None, :].expand(B, L, Hkv, group, d).reshape(B, L, Hkv * group, d)


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    Hkv = k_cache.shape[2]
    k = _expand_kv(_gather(k_cache, block_table), H // Hkv)  # (B, L, H, d)
    v = _expand_kv(_gather(v_cache, block_table), H // Hkv)
    L = k.shape[1]
    scores = torch.einsum("bhd,blhd->bhl", q, k) / math.sqrt(d)
    idx = torch.arange(L, device=q.device)
    mask = idx.unsqueeze(0) >= lengths.unsqueeze(1)  # (B, L): past the sequence's end
    scores = scores.masked_fill(mask.unsqueeze(1), float("-inf"))
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores)
    attn = e / e.sum(dim=-1, keepdim=True)
    return torch.einsum("bhl,blhd->bhd", attn, v)
