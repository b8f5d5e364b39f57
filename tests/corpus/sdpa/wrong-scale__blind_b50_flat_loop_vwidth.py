import math

import torch


def _attend_2d(q2, k2, v2, keep, scale):
    # one (Tq, d) x (Tk, d) problem at a time
    logits = (q2 @ k2.T) * scale
    if keep is not None:
        logits = logits.masked_fill(keep.logical_not(), float("-inf"))
    w = torch.softmax(logits, dim=-1)
    return w @ v2, w


def scaled_dot_product_attention(q, k, v, mask=None):
    *lead, Tq, _ = q.shape
    Tk = k.shape[-2]
    head_dim = v.shape[-1]  # MISTAKE: width of the values, the scores need q/k's last dim
    scale = 1.0 / math.sqrt(head_dim)

    qf = q.reshape(-1, Tq, q.shape[-1])
    kf = k.reshape(-1, Tk, k.shape[-1])
    vf = v.reshape(-1, Tk, v.shape[-1])
    mf = None
    if mask is not None:
        mf = mask.expand(*lead, Tq, Tk).reshape(-1, Tq, Tk)

    outs, probs = [], []
    for n in range(qf.shape[0]):
        o, w = _attend_2d(qf[n], kf[n], vf[n], None if mf is None else mf[n], scale)
        outs.append(o)
        probs.append(w)

    out = torch.stack(outs).reshape(*lead, Tq, v.shape[-1])
    weights = torch.stack(probs).reshape(*lead, Tq, Tk)
    return out, weights
