"""Exercise paged-attention: vLLM's paged KV cache, one decode step (target: 8 minutes).

Write the function below.

paged_attention(q, k_cache, v_cache, block_table, lengths) -> out (B, H, d)
    One decode step: each sequence's single new query attends to all its cached tokens.
    q (B, H, d)
    k_cache, v_cache (num_blocks, block_size, Hkv, d): a pool of blocks shared by all sequences
    block_table int64 (B, max_blocks): block_table[b, n] is the pool block holding tokens
        n * block_size .. (n + 1) * block_size - 1 of sequence b
    lengths int64 (B,): sequence b has lengths[b] >= 1 cached tokens (the new token's key already written)
    Token t of sequence b is at k_cache[block_table[b, t // block_size], t % block_size].
    Entries of block_table past a sequence's last block, and slots past its length in its last block, hold
    other data: gathering them and masking by length is fine, reading them into the result is not.
    Query head h reads kv head h // (H // Hkv), as in gqa; scores divided by sqrt(d).
    Keep the input's dtype and device.
    Not allowed: F.scaled_dot_product_attention, nn.MultiheadAttention.

Check it with:  attn-drill check
"""

import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    # TODO: gather each sequence's keys and values through block_table; mask past lengths; attend with GQA
    raise NotImplementedError("write paged_attention")
