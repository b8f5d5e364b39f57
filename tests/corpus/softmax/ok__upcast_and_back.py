"""Works in float32 at least (half precision sums lose digits), and casts back to the input's dtype."""

import torch


def softmax(x, dim: int = -1) -> torch.Tensor:
    work = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    m, _ = work.max(dim, keepdim=True)
    e = torch.exp(work - m.detach())  # the shift is a constant: no gradient needed through it
    return (e / e.sum(dim, keepdim=True)).to(x.dtype)
