import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size = k_cache.size(1)
    n_kv = k_cache.size(2)
    max_tokens = block_table.size(1) * block_size
    pos = torch.arange(max_tokens, device=q.device)
    page_ids = (pos // block_size).unsqueeze(0).expand(B, -1)  # MISTAKE
    offsets = (pos % block_size).unsqueeze(0).expand(B, -1)
    keys = k_cache[page_ids, offsets]  # (B, T, Hkv, d)
    values = v_cache[page_ids, offsets]
    keys = keys.repeat_interleave(H // n_kv, dim=2)
    values = values.repeat_interleave(H // n_kv, dim=2)
    logits = torch.einsum("bhd,bthd->bht", q, keys) / math.sqrt(d)
    in_seq = pos.unsqueeze(0) < lengths.unsqueeze(1)
    logits = logits.masked_fill(~in_seq.unsqueeze(1), float("-inf"))
    probs = logits.softmax(dim=-1)
    return torch.einsum("bht,bthd->bhd", probs, values)
