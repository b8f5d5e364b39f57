import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    *lead, tq, d = q.shape
    tk = k.shape[-2]
    scale = 1.0 / math.sqrt(d)

    logits = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        mask = mask.to(torch.bool)
        if mask.dim() == 2:  # (Tq, Tk): same mask for every batch / head
            mask = mask.view(*([1] * len(lead)), tq, tk)
        mask = mask.expand(logits.shape)
        neg_inf = torch.full_like(logits, float("-inf"))
        logits = torch.where(mask, logits, neg_inf)
    probs = torch.softmax(logits, dim=-1)

    grad_v = torch.matmul(probs.transpose(-1, -2), dout)
    grad_probs = torch.matmul(dout, v.transpose(-1, -2))
    row = torch.sum(grad_probs * probs, dim=-1, keepdim=True)
    grad_logits = probs * (grad_probs - row)
    if mask is not None:
        grad_logits = torch.where(mask, grad_logits, torch.zeros_like(grad_logits))
    grad_q = torch.matmul(grad_logits, k) * scale
    grad_k = torch.matmul(grad_logits.transpose(-1, -2), q) * scale
    return grad_q, grad_k, grad_v
