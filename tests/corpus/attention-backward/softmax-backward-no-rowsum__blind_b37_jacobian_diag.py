import math

import torch


def softmax_vjp(p, grad):
    """Vector-Jacobian product of softmax along the last dim."""
    jac = torch.diag_embed(p)  # MISTAKE
    return (grad.unsqueeze(-2) @ jac).squeeze(-2)


def attention_backward(q, k, v, dout, mask=None):
    d = q.shape[-1]
    logits = q @ k.mT / math.sqrt(d)
    if mask is not None:
        logits = logits.masked_fill(mask.logical_not(), -math.inf)
    m = logits.amax(-1, keepdim=True)
    w = (logits - m).exp()
    p = w / w.sum(-1, keepdim=True)

    dv = p.mT @ dout
    dlogits = softmax_vjp(p, dout @ v.mT)
    dq = dlogits @ k / math.sqrt(d)
    dk = dlogits.mT @ q / math.sqrt(d)
    return dq, dk, dv
