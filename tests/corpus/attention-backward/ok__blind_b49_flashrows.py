import math

import torch


ROWS_PER_STEP = 3


def attention_backward(q, k, v, dout, mask=None):
    """FlashAttention-2 style backward, a few query rows at a time, with D = rowsum(dO * O)."""
    Tq, Tk = q.shape[-2], k.shape[-2]
    c = 1.0 / math.sqrt(q.shape[-1])
    allowed = None
    if mask is not None:
        allowed = torch.broadcast_to(mask, (*q.shape[:-1], Tk))

    grad_q = []
    grad_k = torch.zeros_like(k)
    grad_v = torch.zeros_like(v)
    for r0 in range(0, Tq, ROWS_PER_STEP):
        r1 = min(r0 + ROWS_PER_STEP, Tq)
        qi, doi = q[..., r0:r1, :], dout[..., r0:r1, :]
        logits = torch.matmul(qi, k.transpose(-1, -2)) * c
        if allowed is not None:
            logits = logits.masked_fill(~allowed[..., r0:r1, :], -math.inf)
        lse = torch.logsumexp(logits, dim=-1, keepdim=True)
        probs = torch.exp(logits - lse)
        probs = torch.where(torch.isfinite(lse), probs, torch.zeros_like(probs))  # a row that sees nothing
        oi = torch.matmul(probs, v)
        delta = (doi * oi).sum(dim=-1, keepdim=True)                 # = rowsum(P * dP)
        dprobs = torch.matmul(doi, v.transpose(-1, -2))
        dlogits = probs * (dprobs - delta)
        grad_q.append(torch.matmul(dlogits, k) * c)
        grad_k = grad_k + torch.matmul(dlogits.transpose(-1, -2), qi) * c
        grad_v = grad_v + torch.matmul(probs.transpose(-1, -2), doi)
    return torch.cat(grad_q, dim=-2), grad_k, grad_v
