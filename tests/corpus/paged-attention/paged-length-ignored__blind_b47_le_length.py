import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, bs, hkv, _ = k_cache.shape
    max_tokens = block_table.shape[1] * bs

    tok = torch.arange(max_tokens, device=q.device)
    blk = torch.gather(block_table, 1, (tok // bs).unsqueeze(0).expand(B, -1))  # (B, T)
    slot = (tok % bs).unsqueeze(0).expand(B, -1)                                 # (B, T)
    keys = k_cache[blk, slot]    # (B, T, hkv, d)
    values = v_cache[blk, slot]  # (B, T, hkv, d)

    valid = tok.unsqueeze(0) <= lengths.unsqueeze(1)  # MISTAKE: <= keeps the slot at index lengths[b] too

    g = H // hkv
    qg = q.reshape(B, hkv, g, d)
    logits = torch.einsum("bngd,btnd->bngt", qg, keys) / math.sqrt(d)
    logits = logits.masked_fill(~valid[:, None, None, :], float("-inf"))
    p = torch.softmax(logits, dim=-1)
    out = torch.einsum("bngt,btnd->bngd", p, values)
    return out.reshape(B, H, d)
