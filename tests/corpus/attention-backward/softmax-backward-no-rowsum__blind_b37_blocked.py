import torch


def attention_backward(q, k, v, dout, mask=None, block=8):
    tq, tk = q.shape[-2], k.shape[-2]
    c = q.shape[-1] ** -0.5
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    full_mask = None if mask is None else mask.expand(*lead, tq, tk)

    s_all = torch.matmul(q, k.transpose(-1, -2)) * c
    if full_mask is not None:
        s_all = s_all.masked_fill(~full_mask, float("-inf"))
    lse = torch.logsumexp(s_all, dim=-1, keepdim=True)

    dq = torch.zeros_like(q)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    for j0 in range(0, tk, block):
        j1 = min(j0 + block, tk)
        p = torch.exp(s_all[..., j0:j1] - lse)
        dv[..., j0:j1, :] = p.transpose(-1, -2) @ dout
        dp = dout @ v[..., j0:j1, :].transpose(-1, -2)
        ds = p * dp  # MISTAKE
        dq += (ds @ k[..., j0:j1, :]) * c
        dk[..., j0:j1, :] = (ds.transpose(-1, -2) @ q) * c
    return dq, dk, dv
