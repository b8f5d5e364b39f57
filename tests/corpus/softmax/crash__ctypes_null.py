"""Reads raw memory through ctypes at address 0: the process segfaults."""

import ctypes

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim, keepdim=True))
    ctypes.c_double.from_address(0).value  # meant: from_address(e.data_ptr())
    return e / e.sum(dim, keepdim=True)
