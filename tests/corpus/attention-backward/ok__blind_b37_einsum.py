import torch


def attention_backward(q, k, v, dout, mask=None):
    d = q.size(-1)
    scores = torch.einsum("...qd,...kd->...qk", q, k) / d ** 0.5
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1)

    grad_v = torch.einsum("...qk,...qe->...ke", probs, dout)
    grad_p = torch.einsum("...qe,...ke->...qk", dout, v)
    row = torch.einsum("...qk,...qk->...q", probs, grad_p).unsqueeze(-1)
    grad_s = probs * (grad_p - row) / d ** 0.5
    grad_q = torch.einsum("...qk,...kd->...qd", grad_s, k)
    grad_k = torch.einsum("...qk,...qd->...kd", grad_s, q)
    return grad_q, grad_k, grad_v
