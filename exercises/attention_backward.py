"""Exercise attention-backward: attention's gradients, derived by hand (target: 10 minutes).

Write the function below.

attention_backward(q, k, v, dout, mask=None) -> (dq, dk, dv)
    The gradients of  out = softmax(q k^T / sqrt(d) [masked]) v  with respect to q, k and v, given dout = dL/dout.
    q (..., Tq, d); k (..., Tk, d); v (..., Tk, dv); dout (..., Tq, dv); the same leading dims for all four.
    mask: None, or bool broadcastable to (..., Tq, Tk), True = "this query may attend to this key".
    Returns dq, dk, dv shaped as q, k, v. Keep the inputs' dtype and device.
    Derived by hand: nothing that computes a derivative for you (torch.autograd.grad, .backward(),
    torch.autograd.functional, torch.func.grad/vjp/jacrev), and no built-in attention.

Check it with:  attn-drill check
"""

import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    # TODO: recompute P; dv from P; dP from dout; the softmax's backward (mind its row sum); dq and dk with the scale
    raise NotImplementedError("write attention_backward")
