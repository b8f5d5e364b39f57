import torch


class _Attention(torch.nn.Module):
    def forward(self, q, k, v, mask=None):
        scores = torch.einsum("...qd,...kd->...qk", q, k) * q.shape[-1] ** -0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.einsum("...qk,...kd->...qd", scores.softmax(-1), v)


def attention_backward(q, k, v, dout, mask=None):
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    with torch.enable_grad():
        out = _Attention()(*leaves, mask=mask)
        # <out, dout> is a scalar whose gradient w.r.t. out is exactly dout
        loss = (out * dout.detach()).sum()
        loss.backward()  # MISTAKE
    return tuple(t.grad for t in leaves)
