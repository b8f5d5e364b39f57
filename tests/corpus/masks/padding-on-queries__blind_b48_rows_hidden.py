import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    q_pos = torch.arange(tk - tq, tk, device=device)  # the queries are the last tq positions
    k_pos = torch.arange(tk, device=device)
    return k_pos.unsqueeze(0) <= q_pos.unsqueeze(1)


def padding_mask(lengths, t):
    B = lengths.shape[0]
    idx = torch.arange(t, device=lengths.device).expand(B, t)
    return idx < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    valid = padding_mask(lengths, t)
    mask = valid[:, None, :, None].expand(-1, 1, t, t)  # MISTAKE: puts the padding on the query rows, not the key columns
    if causal:
        mask = mask & causal_mask(t, t, device=lengths.device)
    return mask
