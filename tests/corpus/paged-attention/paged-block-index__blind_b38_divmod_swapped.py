import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size = k_cache.shape[1]
    n_rep = H // k_cache.shape[2]
    outputs = []
    for b in range(B):
        keys, values = [], []
        for t in range(int(lengths[b])):
            block, slot = block_table[b, t % block_size], t // block_size  # MISTAKE
            keys.append(k_cache[block, slot])
            values.append(v_cache[block, slot])
        k = torch.stack(keys).repeat_interleave(n_rep, dim=1).transpose(0, 1)    # (H, L, d)
        v = torch.stack(values).repeat_interleave(n_rep, dim=1).transpose(0, 1)
        scores = torch.einsum("hd,hld->hl", q[b], k) / math.sqrt(d)
        attn = torch.softmax(scores, dim=-1)
        outputs.append(torch.einsum("hl,hld->hd", attn, v))
    return torch.stack(outputs)
