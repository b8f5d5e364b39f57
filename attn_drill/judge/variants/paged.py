"""Known mistakes of paged attention (paged-attention), as executable variants.

`paged_attention` computes the model answer with default knobs (tests/test_reference_paged_attention.py proves
it): where token t of a sequence is read from (the block, the slot, the table), which tokens are attended, and
the attention around them (variants.attention's Knobs: scale, softmax axis, kv repeat).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_drill.judge.variants.attention import RIGHT, Knobs, repeat_kv


@dataclass(frozen=True)
class PagedKnobs:
    index: str = "ok"  # block t // bs, slot t % bs: ok | swapped (block t % bs, slot t // bs) | next (block n + 1)
    #                    | previous (block n - 1) | slot_mod_blocks (a flat slot block * bs + t % num_blocks)
    #                    | slot_major (the gathered blocks flattened slot by slot: block t % max_blocks, slot
    #                      t // max_blocks)
    length: str = "ok"  # tokens attended: ok (t < length) | all (every gathered slot) | short (t < length - 1)
    #                     | long (t <= length) | blocks (every slot of the sequence's own blocks)
    table: str = "ok"  # ok | pool (token t of every sequence at pool position t) | offset (block b * max_blocks + n)
    fill: str = "-inf"  # what the hidden tokens' scores get: -inf | zero
    attn: Knobs = RIGHT  # scale, softmax_dim, kv_repeat


RIGHT_PAGED = PagedKnobs()


def paged_attention(q, k_cache, v_cache, block_table, lengths, knobs: PagedKnobs = RIGHT_PAGED):
    B, H, d = q.shape
    num_blocks, bs, Hkv, _ = k_cache.shape
    max_blocks = block_table.size(1)
    T = max_blocks * bs
    t = torch.arange(T)
    n, slot = t // bs, t % bs
    if knobs.index == "swapped":
        n, slot = t % bs, t // bs
    elif knobs.index == "next":
        n = n + 1
    elif knobs.index == "previous":
        n = n - 1
    elif knobs.index == "slot_major":
        n, slot = t % max_blocks, t // max_blocks
    if knobs.table == "pool":
        blocks = (t // bs).expand(B, T)
    elif knobs.table == "offset":
        blocks = torch.arange(B)[:, None] * max_blocks + t // bs
    else:
        blocks = block_table[:, n]  # an index past the table raises, as the user's code would
    if knobs.index == "slot_mod_blocks":  # a flat slot mapping into the pool: raises only past the pool's end
        flat = blocks * bs + t % num_blocks
        flat = torch.where(t[None, :] < lengths[:, None], flat, 0)  # read for the first lengths[b] tokens only
        k, v = k_cache.reshape(-1, Hkv, d)[flat], v_cache.reshape(-1, Hkv, d)[flat]
    else:
        k = k_cache[blocks, slot]  # (B, T, Hkv, d): raises where an index leaves the pool or the block
        v = v_cache[blocks, slot]
    k = repeat_kv(k.transpose(1, 2), H // Hkv, knobs.attn.kv_repeat).transpose(1, 2)  # (B, T, H, d)
    v = repeat_kv(v.transpose(1, 2), H // Hkv, knobs.attn.kv_repeat).transpose(1, 2)
    scale = 1.0 / math.sqrt(d) if knobs.attn.scale is None else knobs.attn.scale
    scores = torch.einsum("bhd,bthd->bht", q, k) * scale  # (B, H, T)
    length = lengths[:, None]  # (B, 1)
    limit = {"ok": length, "short": length - 1, "long": length + 1, "all": length + T,
             "blocks": (length + bs - 1) // bs * bs}[knobs.length]
    valid = t[None, :] < limit  # (B, T)
    scores = scores.masked_fill(~valid[:, None, :], float("-inf") if knobs.fill == "-inf" else 0.0)
    # a softmax over a slice with nothing visible (no token left, or the heads of a hidden token) gives NaN: as
    # code that never gathered those tokens, it adds nothing
    weights = torch.nan_to_num(torch.softmax(scores, dim=knobs.attn.softmax_dim), nan=0.0)
    return torch.einsum("bht,bthd->bhd", weights, v)
