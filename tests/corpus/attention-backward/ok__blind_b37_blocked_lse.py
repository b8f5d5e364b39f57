import torch


def attention_backward(q, k, v, dout, mask=None, block=16):
    """Flash-attention style backward: logsumexp kept per row, keys in blocks."""
    tq, tk = q.shape[-2], k.shape[-2]
    sm_scale = q.shape[-1] ** -0.5
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    if mask is not None:
        mask = mask.expand(*lead, tq, tk)

    def scores(j0, j1):
        s = torch.matmul(q, k[..., j0:j1, :].transpose(-1, -2)) * sm_scale
        if mask is not None:
            s = s.masked_fill(~mask[..., j0:j1], float("-inf"))
        return s

    # pass 1: row logsumexp and the output
    lse = torch.logsumexp(scores(0, tk), dim=-1, keepdim=True)
    out = torch.zeros(*lead, tq, v.shape[-1], dtype=q.dtype, device=q.device)
    for j0 in range(0, tk, block):
        j1 = min(j0 + block, tk)
        out = out + torch.exp(scores(j0, j1) - lse) @ v[..., j0:j1, :]
    delta = (out * dout).sum(-1, keepdim=True)

    # pass 2: gradients, one key block at a time
    dq = torch.zeros_like(q)
    dk_blocks, dv_blocks = [], []
    for j0 in range(0, tk, block):
        j1 = min(j0 + block, tk)
        p = torch.exp(scores(j0, j1) - lse)
        dv_blocks.append(p.transpose(-1, -2) @ dout)
        dp = dout @ v[..., j0:j1, :].transpose(-1, -2)
        ds = p * (dp - delta)
        dq = dq + ds @ k[..., j0:j1, :] * sm_scale
        dk_blocks.append(ds.transpose(-1, -2) @ q * sm_scale)
    return dq, torch.cat(dk_blocks, dim=-2), torch.cat(dv_blocks, dim=-2)
