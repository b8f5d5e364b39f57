import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    d = q.size(-1)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    grad_v = torch.matmul(probs.transpose(-1, -2), dout)
    grad_p = torch.matmul(dout, v.transpose(-1, -2))
    grad_s = probs * grad_p  # MISTAKE
    grad_q = torch.matmul(grad_s, k) / math.sqrt(d)
    grad_k = torch.matmul(grad_s.transpose(-1, -2), q) / math.sqrt(d)
    return grad_q, grad_k, grad_v
