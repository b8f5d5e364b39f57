import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    d = q.shape[-1]
    scores = torch.matmul(q, k.mT) / math.sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    probs = scores.softmax(dim=-1)

    d_v = torch.matmul(probs.mT, dout)
    d_probs = torch.matmul(v, dout.mT)  # MISTAKE
    d_scores = probs * (d_probs - (probs * d_probs).sum(dim=-1, keepdim=True))
    d_q = torch.matmul(d_scores, k) / math.sqrt(d)
    d_k = torch.matmul(d_scores.mT, q) / math.sqrt(d)
    return d_q, d_k, d_v
