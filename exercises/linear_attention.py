"""Exercise linear-attention: Katharopoulos et al.'s linear attention, causal and not (target: 6 minutes).

Write the function below.

linear_attention(q, k, v, causal=False, eps=1e-6) -> out
    q, k (B, H, T, d); v (B, H, T, dv); out (B, H, T, dv)
    phi(x) = elu(x) + 1
    out_i = phi(q_i) . S / (phi(q_i) . z + eps),   S = sum_j phi(k_j)^T v_j  (d, dv),   z = sum_j phi(k_j)  (d,)
    the sums over every j, or over j <= i when causal (running sums).
    Causal: no tensor may hold T * T numbers or more per (batch, head); a running-sum tensor
    (B, H, T, d, dv) is fine (the checker's causal cases have T > 2 * d * dv).
    eps is added to the denominator phi(q_i) . z, as written (the checker also uses eps = 0.5).
    Keep the input's dtype and device.
    Not allowed: F.scaled_dot_product_attention, nn.MultiheadAttention.

Check it with:  attn-drill check
"""

import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    # TODO: the feature map; the key-value sum S and the key sum z (running sums when causal); num / (den + eps)
    raise NotImplementedError("write linear_attention")
