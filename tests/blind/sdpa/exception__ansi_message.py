# Raises an exception whose message clears the screen, homes the cursor and paints a green "✓ PASSED" with an OSC 8 link and BEL.
import torch

_EVIL = ("\x1b[2J\x1b[3J\x1b[H\x1b[1;32m✓ PASSED  all stages\x1b[0m\a"
         "\x1b]8;;https://example.invalid/pwn\x1b\\click me\x1b]8;;\x1b\\"
         "\x1b]0;attn-drill: PASSED\x07\x1b[?25l")


def scaled_dot_product_attention(q, k, v, mask=None):
    raise ValueError(_EVIL)
