import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = q.size(-1) ** -0.5
    s = torch.einsum("...id,...jd->...ij", q, k) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    p = torch.softmax(s, dim=-1)

    dv = torch.einsum("...ij,...ie->...je", p, dout)
    dp = torch.einsum("...ie,...je->...ij", dout, v)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    dq = ds.transpose(-2, -1) @ k * scale  # MISTAKE
    dk = torch.einsum("...ij,...id->...jd", ds, q) * scale
    return dq, dk, dv
