# Calls sys.exit(0) inside softmax: a SystemExit with a success code must be an `exception`, never a pass.
import sys

import torch


def softmax(x, dim=-1):
    sys.exit(0)
