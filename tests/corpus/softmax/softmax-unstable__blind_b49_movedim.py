import torch


def softmax(x, dim=-1):
    # bring the axis to normalise over to the end, work there, and put it back
    z = x.movedim(dim, -1)
    peak = z.max()  # MISTAKE: one max for the whole tensor, not per slice
    num = torch.exp(z - peak)
    den = num.sum(dim=-1, keepdim=True)
    return (num / den).movedim(-1, dim)
