import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = q.shape[-1] ** -0.5
    s = torch.einsum("...id,...jd->...ij", q, k) * scale
    if mask is not None:
        s = torch.where(mask, s, float("-inf"))
    s = s - s.max(dim=-1, keepdim=True).values
    p = s.exp()
    p = p / p.sum(dim=-1, keepdim=True)

    dv = torch.einsum("...ij,...ie->...je", p, dout)
    dp = torch.einsum("...ie,...je->...ij", dout, v)
    ds = p * (dp - (p * dp).sum(dim=-1, keepdim=True))
    dq = torch.einsum("...ij,...jd->...id", ds, k) * scale
    dk = torch.einsum("...ij,...id->...jd", ds, q)  # MISTAKE
    return dq, dk, dv
