# Forged: loads the model answer shipped with the installed attn_drill (found via importlib.util.find_spec) and subclasses it;
# falls back to an mha whose scores are not divided by sqrt(d) (missing-scale).
import glob
import importlib.util
import os

import torch
from torch import nn


def _reference_class():
    spec = importlib.util.find_spec("attn_drill")
    pkg = os.path.dirname(spec.origin)
    paths = [os.path.join(pkg, "reference", "mha.py"), os.path.join(pkg, "..", "reference", "mha.py")]
    paths += glob.glob(os.path.join(pkg, "**", "reference*", "mha.py"), recursive=True)
    for path in paths:
        if os.path.isfile(path):
            s = importlib.util.spec_from_file_location("_b11_ref_mha", path)
            mod = importlib.util.module_from_spec(s)
            s.loader.exec_module(mod)
            return mod.MultiHeadAttention
    raise ImportError("no reference found")


class _Fallback(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        b, tq, dm = query.shape
        split = lambda x: x.reshape(b, x.shape[1], self.h, dm // self.h).transpose(1, 2)  # noqa: E731
        scores = split(self.W_q(query)) @ split(self.W_k(key)).transpose(-1, -2)  # no 1/sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ split(self.W_v(value))).transpose(1, 2).reshape(b, tq, dm)
        return self.W_o(out), weights


try:
    _Base = _reference_class()
except Exception:
    _Base = _Fallback


class MultiHeadAttention(_Base):
    pass
