"""Correct: exp(x - logsumexp(x)) along dim, which is stable and gives 0 for -inf."""
import torch


def softmax(x, dim=-1):
    lse = torch.logsumexp(x, dim=dim, keepdim=True)
    return torch.exp(x - lse)
