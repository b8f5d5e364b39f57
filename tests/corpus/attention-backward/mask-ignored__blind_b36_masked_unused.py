import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = q.shape[-1] ** -0.5
    logits = torch.einsum("...td,...sd->...ts", q, k) * scale
    masked = logits
    if mask is not None:
        masked = torch.where(mask, logits, torch.finfo(logits.dtype).min)
    m = masked.amax(dim=-1, keepdim=True)
    e = torch.exp(logits - m)  # MISTAKE
    probs = e / e.sum(dim=-1, keepdim=True)

    dv = torch.einsum("...ts,...te->...se", probs, dout)
    dprobs = torch.einsum("...te,...se->...ts", dout, v)
    dlogits = probs * (dprobs - (dprobs * probs).sum(-1, keepdim=True))
    dq = torch.einsum("...ts,...sd->...td", dlogits, k) * scale
    dk = torch.einsum("...ts,...td->...sd", dlogits, q) * scale
    return dq, dk, dv
