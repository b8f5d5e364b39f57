"""Calls the kernel's overload directly (torch.ops.aten._softmax.default): still the library's softmax."""

import torch


def softmax(x, dim=-1):
    return torch.ops.aten._softmax.default(x, dim, False)
