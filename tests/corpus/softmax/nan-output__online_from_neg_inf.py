"""An online softmax (running max and sum) started at m = -inf: a first entry of -inf gives exp(-inf - -inf) = NaN."""

import torch


def softmax(x, dim=-1):
    xs = x.movedim(dim, 0)
    m = torch.full_like(xs[0], float("-inf"))
    s = torch.zeros_like(xs[0])
    for xi in xs:
        m_new = torch.maximum(m, xi)
        s = s * torch.exp(m - m_new) + torch.exp(xi - m_new)
        m = m_new
    return (torch.exp(xs - m) / s).movedim(0, dim)
