import torch


def attention_backward(q, k, v, dout, mask=None):
    d = q.shape[-1]
    scale = 1 / d ** (1 // 2)  # MISTAKE
    s = (q @ k.transpose(-1, -2)) * scale
    if mask is not None:
        s = s.masked_fill(mask == 0, float("-inf"))
    p = torch.exp(s - s.amax(-1, keepdim=True))
    p = p / p.sum(-1, keepdim=True)
    out = p @ v

    dv = p.transpose(-1, -2) @ dout
    dp = dout @ v.transpose(-1, -2)
    ds = p * (dp - (out * dout).sum(-1, keepdim=True)) * scale
    dq = ds @ k
    dk = ds.transpose(-1, -2) @ q
    return dq, dk, dv
