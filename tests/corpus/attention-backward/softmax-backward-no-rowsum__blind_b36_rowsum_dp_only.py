import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    d = q.shape[-1]
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    probs = scores.softmax(dim=-1)

    dv = torch.einsum("...qk,...qe->...ke", probs, dout)
    dprobs = torch.einsum("...qe,...ke->...qk", dout, v)
    row = dprobs.sum(dim=-1, keepdim=True)  # MISTAKE
    dscores = probs * (dprobs - row)
    dq = torch.einsum("...qk,...kd->...qd", dscores, k) / math.sqrt(d)
    dk = torch.einsum("...qk,...qd->...kd", dscores, q) / math.sqrt(d)
    return dq, dk, dv
