"""Causal and padding masks: a model answer.

Every mask is bool with True = "may attend", the convention of F.scaled_dot_product_attention's attn_mask.
"""

import torch


def causal_mask(tq, tk=None, device=None):
    """bool (tq, tk): query i sees key j iff j <= i + (tk - tq), bottom-right aligned."""
    tk = tq if tk is None else tk
    # why tk - tq: the queries are the *last* tq positions of the tk keys (a KV cache), so query i sits at
    # position i + (tk - tq); SDPA's is_causal=True aligns top-left instead, wrong whenever tq != tk
    i = torch.arange(tq, device=device)[:, None]  # (tq, 1)
    j = torch.arange(tk, device=device)[None, :]  # (1, tk)
    return j <= i + (tk - tq)  # (tq, tk)


def padding_mask(lengths, t):
    """lengths int64 (B,) -> bool (B, t), True where key j < lengths[b]."""
    j = torch.arange(t, device=lengths.device)  # (t,)
    return j[None, :] < lengths[:, None]  # (B, t); strictly less: key lengths[b] is the first padded one


def attention_mask(lengths, t, causal=False):
    """bool (B, 1, t, t): key j of sequence b is visible to query i iff j < lengths[b] (and j <= i if causal)."""
    # padding hides key *columns* only: a padded query row still sees the real keys (its output is ignored later)
    mask = padding_mask(lengths, t)[:, None, None, :]  # (B, 1, 1, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)  # (B, 1, t, t)
    return mask.expand(-1, -1, t, -1)  # (B, 1, t, t): one mask for every head
