"""A module-level __getattr__ that raises something other than AttributeError for every name."""
import math

import torch


def __getattr__(name):
    raise RuntimeError(f'no {name} here')
