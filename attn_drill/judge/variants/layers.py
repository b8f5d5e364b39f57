"""Known mistakes of the Transformer layers (encoder-layer, decoder-layer), as executable variants.

`encoder` and `decoder` compute the reference's answer with default knobs (tests/test_reference_layers.py
proves it); each knob reproduces one mistake of the layer around its attention: a residual dropped, the norms
placed otherwise, no ReLU, no causal mask, cross-attention's inputs swapped, the masks misrouted. Mistakes
inside an attention sub-layer are the mha variants' (the `attn` knob), applied to every attention sub-layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attn_drill.judge.variants.attention import RIGHT, Knobs, linear, mha

ENCODER_BLOCKS = ("self_attn", "ff")
DECODER_BLOCKS = ("self_attn", "cross_attn", "ff")
PLACEMENTS = ("pre", "post", "out", "in")  # where a sub-layer's norm sits (see `residual_block`)


@dataclass(frozen=True)
class LayerKnobs:
    missing_residual: tuple[str, ...] = ()  # sub-layers whose output replaces their input
    residual_when: bool | None = None  # ...in every case (None), or only when norm_first is this value
    placement: tuple[str, ...] | str | None = None  # one of PLACEMENTS per sub-layer; None: as norm_first says;
    #                                                "flipped": the other one of pre and post
    activation: str = "relu"  # relu | none | after (ReLU after ff2, none between the layers)
    causal: str = "ok"  # decoder: ok | none | unless_tgt (only when no tgt_mask is given) | diagonal (j < i)
    #                     | future (j <= i + 1) | or_tgt (causal | tgt_mask: the union, not the intersection)
    cross_swapped: bool = False  # decoder: cross-attention's queries from memory, keys and values from x
    route: str = "ok"  # decoder: ok | swapped | tgt_both | memory_both | no_tgt | no_memory (what each attention gets)
    attn: Knobs = RIGHT  # a mistake inside every attention sub-layer


LAYER_RIGHT = LayerKnobs()


def layer_norm(params: dict, name: str, x):
    D = x.size(-1)
    return F.layer_norm(x, (D,), params[f"{name}.weight"], params[f"{name}.bias"])


def sub_params(params: dict, prefix: str) -> dict:
    """{W_q.weight: ...} of one attention sub-layer, from the layer's {self_attn.W_q.weight: ...}."""
    return {k[len(prefix) + 1:]: v for k, v in params.items() if k.startswith(prefix + ".")}


def feed_forward(params: dict, x, activation: str = "relu"):
    h = linear(x, params, "ff1")  # (B, T, d_ff)
    if activation == "relu":
        h = torch.relu(h)
    y = linear(h, params, "ff2")  # (B, T, D)
    return torch.relu(y) if activation == "after" else y


def residual_block(params: dict, norm: str, x, f, place: str, residual: bool = True):
    """One sub-layer f with its residual and its norm:
    pre  x + f(norm(x))     post  norm(x + f(x))
    out  x + norm(f(x))     (the sub-layer's output normalised, the sum not)
    in   norm(x) + f(norm(x))  (the residual taken from the normalised input)."""
    if place == "pre":
        y = f(layer_norm(params, norm, x))
        return x + y if residual else y
    if place == "post":
        y = f(x)
        return layer_norm(params, norm, x + y if residual else y)
    if place == "out":
        y = layer_norm(params, norm, f(x))
        return x + y if residual else y
    h = layer_norm(params, norm, x)
    y = f(h)
    return h + y if residual else y


def run_blocks(params: dict, x, blocks: tuple, fs: dict, norm_first: bool, kn: LayerKnobs):
    dropped = kn.missing_residual if kn.residual_when in (None, norm_first) else ()
    for i, name in enumerate(blocks):
        if kn.placement == "flipped":  # norm_first read the other way round
            place = "post" if norm_first else "pre"
        else:
            place = kn.placement[i] if kn.placement else ("pre" if norm_first else "post")
        x = residual_block(params, f"norm{i + 1}", x, fs[name], place, name not in dropped)
    return x


def attend(params: dict, name: str, H: int, query, kv, mask, kn: LayerKnobs):
    return mha(sub_params(params, name), H, query, kv, kv, mask, kn.attn)[0]  # (B, Tq, D)


def encoder(params: dict, H: int, x, mask=None, norm_first: bool = False, kn: LayerKnobs = LAYER_RIGHT):
    """EncoderLayer from a state dict {self_attn.W_q.weight, ..., ff1.weight, norm1.weight, ...}: (B, T, D)."""
    fs = {"self_attn": lambda h: attend(params, "self_attn", H, h, h, mask, kn),
          "ff": lambda h: feed_forward(params, h, kn.activation)}
    return run_blocks(params, x, ENCODER_BLOCKS, fs, norm_first, kn)


def causal_mask(Tq: int, device, offset: int = 0) -> torch.Tensor:
    """(1, Tq, Tq): query i sees keys j <= i + offset (0 is right; -1 hides the diagonal, 1 shows one future key)."""
    return torch.ones(Tq, Tq, dtype=torch.bool, device=device).tril(offset).unsqueeze(0)


def self_mask(x, tgt_mask, kn: LayerKnobs):
    """The mask decoder self-attention uses: causal (unless a knob drops it) and tgt_mask's hidden keys."""
    causal = causal_mask(x.size(1), x.device, {"diagonal": -1, "future": 1}.get(kn.causal, 0))
    use_causal = kn.causal not in ("none", "unless_tgt") or tgt_mask is None and kn.causal == "unless_tgt"
    if tgt_mask is None:
        return causal if use_causal else None
    if kn.causal == "or_tgt":
        return causal | tgt_mask
    return causal & tgt_mask if use_causal else tgt_mask


def routed(tgt_mask, memory_mask, route: str) -> tuple:
    """(the mask self-attention reads, the one cross-attention reads)."""
    return {"ok": (tgt_mask, memory_mask), "swapped": (memory_mask, tgt_mask),
            "tgt_both": (tgt_mask, tgt_mask), "memory_both": (memory_mask, memory_mask),
            "no_tgt": (None, memory_mask), "no_memory": (tgt_mask, None)}[route]


def decoder(params: dict, H: int, x, memory, tgt_mask=None, memory_mask=None, norm_first: bool = False,
            kn: LayerKnobs = LAYER_RIGHT):
    """DecoderLayer from a state dict {self_attn.W_q.weight, cross_attn..., ff1..., norm1..3}: (B, Tq, D).
    A knob whose mistake cannot run on these shapes raises RuntimeError, as the user's code would."""
    self_in, cross_in = routed(tgt_mask, memory_mask, kn.route)

    def cross(h):
        if kn.cross_swapped:
            return attend(params, "cross_attn", H, memory, h, cross_in, kn)  # (B, Tk, D): queries from memory
        return attend(params, "cross_attn", H, h, memory, cross_in, kn)

    fs = {"self_attn": lambda h: attend(params, "self_attn", H, h, h, self_mask(h, self_in, kn), kn),
          "cross_attn": cross,
          "ff": lambda h: feed_forward(params, h, kn.activation)}
    return run_blocks(params, x, DECODER_BLOCKS, fs, norm_first, kn)
