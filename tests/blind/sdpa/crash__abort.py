# Calls os.abort() (SIGABRT, no Python cleanup) on the first call.
import os

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    os.abort()
