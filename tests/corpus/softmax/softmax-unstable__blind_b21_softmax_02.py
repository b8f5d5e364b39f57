"""Exercise softmax: a numerically stable softmax."""

import torch


def softmax(x, dim=-1):
    # 减去最大值, 防止 exp 溢出
    c = x.flatten().max()  # MISTAKE
    numerator = torch.exp(x - c)
    denominator = numerator.sum(dim=dim, keepdim=True)
    return numerator / denominator
