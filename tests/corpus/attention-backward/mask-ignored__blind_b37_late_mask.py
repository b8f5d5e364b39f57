import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = q.shape[-1] ** -0.5
    logits = torch.matmul(q, k.transpose(-2, -1)) * scale
    row_max = logits.amax(dim=-1, keepdim=True)
    num = torch.exp(logits - row_max)
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))  # MISTAKE
    probs = num / num.sum(dim=-1, keepdim=True)

    dv = torch.matmul(probs.transpose(-2, -1), dout)
    dprobs = torch.matmul(dout, v.transpose(-2, -1))
    rowdot = (probs * dprobs).sum(dim=-1, keepdim=True)
    dlogits = probs * (dprobs - rowdot)
    dq = torch.matmul(dlogits, k) * scale
    dk = torch.matmul(dlogits.transpose(-2, -1), q) * scale
    return dq, dk, dv
