"""One pass with a running max and a running sum (an online softmax), guarded against -inf - -inf."""

import torch


def softmax(x, dim=-1):
    xs = x.movedim(dim, 0)
    m = torch.full_like(xs[0], float("-inf"))
    s = torch.zeros_like(xs[0])
    for xi in xs:
        m_new = torch.maximum(m, xi)
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # both -inf: nothing seen yet
        s = s * torch.exp(m - safe) + torch.exp(xi - safe)
        m = m_new
    safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    return (torch.exp(xs - safe) / s).movedim(0, dim)
