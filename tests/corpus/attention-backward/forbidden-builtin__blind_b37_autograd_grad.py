import math

import torch


def _forward(q, k, v, mask):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    s = s - s.amax(-1, keepdim=True).detach()
    e = s.exp()
    return (e / e.sum(-1, keepdim=True)) @ v


def attention_backward(q, k, v, dout, mask=None):
    # "recompute the forward and let the chain rule do it" -- the VJP of the forward
    with torch.enable_grad():
        q_, k_, v_ = (t.detach().requires_grad_(True) for t in (q, k, v))
        out = _forward(q_, k_, v_, mask)
        dq, dk, dv = torch.autograd.grad(out, (q_, k_, v_), grad_outputs=dout)  # MISTAKE
    return dq.detach(), dk.detach(), dv.detach()
