import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=False, eps=1e-6):
    q_feat = F.elu(q) + 1
    k_feat = F.elu(k) + 1
    if causal:
        # prefix sums of the outer products: kv_states[..., t, :, :] = sum_{s <= t} phi(k_s)^T v_s
        kv_states = torch.einsum("bhsd,bhse->bhsde", k_feat, v).cumsum(dim=2)
    else:
        # one state for the whole sequence, with a length-1 time axis that einsum broadcasts
        kv_states = torch.einsum("bhsd,bhse->bhde", k_feat, v).unsqueeze(2)
    return torch.einsum("bhtd,bhtde->bhte", q_feat, kv_states)  # MISTAKE: the normaliser phi(q) . z is missing
