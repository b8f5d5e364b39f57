# helper module for sdpa/ok__helpers_sdpa.py and ok__lazy_helper.py (not checked itself): sdpa-only helpers
import math

import torch

WHO = "sdpa/helpers.py"


def scaled_scores(q, k):
    """q (..., Tq, d), k (..., Tk, d) -> q k^T / sqrt(d), (..., Tq, Tk)."""
    return torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])


def hide(scores, mask):
    """True = may attend: every other key gets -inf."""
    return scores if mask is None else scores.masked_fill(mask.logical_not(), float("-inf"))
