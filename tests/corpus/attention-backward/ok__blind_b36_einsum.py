import torch


def attention_backward(q, k, v, dout, mask=None):
    d = q.size(-1)
    scale = d ** -0.5
    s = torch.einsum("...id,...jd->...ij", q, k) * scale
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), float("-inf"))
    p = torch.softmax(s, dim=-1)

    dv = torch.einsum("...ij,...ie->...je", p, dout)
    dp = torch.einsum("...ie,...je->...ij", dout, v)
    ds = p * (dp - torch.einsum("...ij,...ij->...i", dp, p).unsqueeze(-1))
    dq = torch.einsum("...ij,...jd->...id", ds, k) * scale
    dk = torch.einsum("...ij,...id->...jd", ds, q) * scale
    return dq, dk, dv
