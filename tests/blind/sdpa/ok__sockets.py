# Correct sdpa that, at import, opens a TCP listener on 127.0.0.1:47311 (served by a daemon thread), binds UDP 47312,
# sends a UDP datagram and tries an outbound TCP connection to 1.1.1.1:53; every failure is swallowed.
import math
import socket
import threading

import torch


def _serve(sock):
    while True:
        try:
            conn, _ = sock.accept()
            conn.sendall(b"b11\n")
            conn.close()
        except OSError:
            return


try:
    _tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    _tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    _tcp.bind(("127.0.0.1", 47311))
    _tcp.listen()
    threading.Thread(target=_serve, args=(_tcp,), daemon=True).start()
except OSError:
    pass
try:
    _udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    _udp.bind(("127.0.0.1", 47312))
    _udp.sendto(b"b11", ("127.0.0.1", 47312))
except OSError:
    pass
try:
    socket.create_connection(("1.1.1.1", 53), timeout=0.5).close()
except OSError:
    pass


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
