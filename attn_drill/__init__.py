"""attn-drill: practise the attention coding round and get told which mistake you made."""

__version__ = "0.1.0"
