"""Trace a passing file for `attn-drill explain`: run it once on a case whose sizes are all distinct and keep,
for every torch call made from the user's file, its line, its name and the shape of what it returned.

Runs in the worker (worker.main with job "task": "explain"). What comes back is plain JSON; the questions are
made from it on the CLI side (attn_drill/practice/explain.py), which never imports torch:

    {"exercise", "case": "B=2 H=3 ...", "given": "q (B, H, Tq, d), ...", "symbols": {"B": 2, ...},
     "calls": [{"what": "forward(query, key, value, mask)", "ops": [[line, depth, name, shape, dtype, number]]}]}

`depth` counts the frames of the user's file on the stack (1 in the function called, 2 in a helper it calls,
or in a comprehension): a line whose value comes back from a helper is told from one that computes it.

`shape` is None when the call returned no tensor (x.size(-1), a setitem); for a tuple of tensors (chunk,
split, max) it is the last one's, the one a `q, k, v = ...` line assigns last. `number` is the first plain
number among the arguments (the scale a line divides by, the value a mask fills in), "-inf" and "inf" as text.

Sizes: every symbol gets its own size, so a size read back names exactly one symbol; where code writes 2 or 3
as literals (the 3 of a fused q|k|v split in mha-fused, the 2 of RoPE's halves in rope and kv-cache) no symbol
is 2 or 3 either.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from attn_drill.i18n import t
from attn_drill.judge import audit, load
from attn_drill.judge.specs import SPECS
from attn_drill.judge.specs.base import Case, load_references, random_mask, random_params
from attn_drill.judge.specs.layers import layer_params, self_visible
from attn_drill.judge.specs.masks import mask_case
from attn_drill.judge.trace import Tracer

MAX_OPS = 4000  # per call: a per-element Python loop still leaves each line's last executions


def _say(key: str, /, **params) -> str:
    """This module's sentence `key` (i18n/<lang>/evidence/show.toml, [explain])."""
    return t(f"evidence.show.explain.{key}", **params)


@dataclass
class Setup:
    """One exercise's traced run: the sizes by symbol, how to say the inputs, and the user calls to make.
    Each call is (what, prepare): prepare(target) builds what the call needs (a module, outside the tracer)
    and returns the zero-argument function that makes the call."""
    symbols: dict[str, int]
    given: str
    calls: list = field(default_factory=list)


def run(path: Path, exercise: str, seed: int) -> dict:
    """The traced calls of the user's passing file, or {"error": why} if it cannot be run."""
    if exercise not in SETUPS:
        return {"error": _say("no_case", exercise=exercise)}
    spec = SPECS[exercise]
    audit.arm(path, load_references())  # as for a check: the file's code may not reach into the checker
    module, bad = load.load(path, spec.id)
    if bad:
        return {"error": _say("unusable", title=bad.title, evidence=bad.evidence)}
    target, bad = spec.resolve(module)
    if bad:
        return {"error": _say("unusable", title=bad.title, evidence=bad.evidence)}
    gen = torch.Generator().manual_seed(seed)
    setup = SETUPS[exercise](spec, gen)
    calls = []
    for what, prepare in setup.calls:
        call = prepare(target)
        ops: list = []
        try:
            with Tracer(path, spec.forbidden, record=_recorder(ops, vars(module))), torch.no_grad():
                call()
        except Exception as e:  # noqa: BLE001 - user code; it passed the checker, so this is rare
            return {"error": _say("raised", error=load.describe(e), given=setup.given)}
        calls.append({"what": what, "ops": ops[-MAX_OPS:]})
    label = " ".join(f"{k}={v}" for k, v in setup.symbols.items())
    return {"exercise": exercise, "case": label, "given": setup.given, "symbols": setup.symbols, "calls": calls}


def _recorder(ops: list, user_globals: dict):
    def record(line, name, args, kwargs, out):
        ops.append([line, _depth(user_globals), name, _shape(out), _dtype(out), _number(args, kwargs)])
        if len(ops) > 2 * MAX_OPS:
            del ops[:MAX_OPS]  # keep memory bounded; the last executions of each line stay
    return record


def _depth(user_globals: dict) -> int:
    """How many frames of the user's file are on the stack (told by their namespace, as the tracer does)."""
    frame, depth = sys._getframe(2), 0  # above record() and the tracer's __torch_function__
    while frame is not None:
        depth += frame.f_globals is user_globals
        frame = frame.f_back
    return depth


def _last_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)) and out and isinstance(out[-1], torch.Tensor):
        return out[-1]
    return None


def _shape(out) -> list[int] | None:
    t = _last_tensor(out)
    return None if t is None else list(t.shape)


def _dtype(out) -> str | None:
    t = _last_tensor(out)
    return None if t is None else str(t.dtype).replace("torch.", "")


def _number(args, kwargs):
    """The first plain number among the arguments (not a bool, not a size given to view or reshape)."""
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, float):
            return a if math.isfinite(a) else ("-inf" if a < 0 else "inf" if a > 0 else "nan")
    return None


# -- the cases ------------------------------------------------------------------------------------------------
def _randn(gen, *shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def _function(spec, case: Case):
    """A function exercise: call it as the checker does."""
    return lambda target: (lambda: spec.call(target, case))


def _module(spec, case: Case):
    """A module exercise: build it (outside the tracer), then call forward as the checker does."""
    def prepare(target):
        module, bad = spec.build(target, case, torch.float64)
        if bad:
            raise RuntimeError(bad.evidence)
        return lambda: spec.call(target, case, module=module)
    return prepare


def softmax(spec, gen) -> Setup:
    sizes = {"B": 2, "H": 3, "Tq": 5, "Tk": 7}
    case = Case("", {"x": _randn(gen, 2, 3, 5, 7)}, {"dim": -1, "shape": (2, 3, 5, 7)})
    return Setup(sizes, _say("given_softmax"), [("softmax(x, dim=-1)", _function(spec, case))])


def sdpa(spec, gen) -> Setup:
    B, H, Tq, Tk, d, dv = 2, 3, 5, 7, 4, 6
    inputs = {"q": _randn(gen, B, H, Tq, d), "k": _randn(gen, B, H, Tk, d), "v": _randn(gen, B, H, Tk, dv),
              "mask": random_mask(gen, B, 1, Tq, Tk)}
    case = Case("", inputs, {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "dv": dv})
    return Setup({"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "dv": dv},
                 "q (B, H, Tq, d), k (B, H, Tk, d), v (B, H, Tk, dv), mask (B, 1, Tq, Tk)",
                 [("scaled_dot_product_attention(q, k, v, mask)", _function(spec, case))])


def masks(spec, gen) -> Setup:
    B, T, Tq, Tk = 2, 6, 5, 7
    lengths = torch.tensor([T, 4], dtype=torch.int64)
    return Setup({"B": B, "T": T, "Tq": Tq, "Tk": Tk}, "tq = Tq, tk = Tk; lengths (B,), t = T", [
        ("causal_mask(Tq, Tk)", _function(spec, mask_case("causal_mask", tq=Tq, tk=Tk))),
        ("padding_mask(lengths, T)", _function(spec, mask_case("padding_mask", lengths=lengths, t=T))),
        ("attention_mask(lengths, T, causal=True)",
         _function(spec, mask_case("attention_mask", lengths=lengths, t=T, causal=True))),
    ])


def mha(spec, gen) -> Setup:
    B, H, Tq, Tk, d = 2, 3, 5, 7, 4
    D = H * d
    config = {"d_model": D, "num_heads": H, "bias": True}
    inputs = {"query": _randn(gen, B, Tq, D), "key": _randn(gen, B, Tk, D), "value": _randn(gen, B, Tk, D),
              "mask": random_mask(gen, B, Tq, Tk)}
    case = Case("", inputs, {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "D": D}, config,
                random_params(gen, spec.layer_shapes(config), True))
    return Setup({"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "D": D},
                 _say("given_mha"),
                 [("forward(query, key, value, mask)", _module(spec, case))])


def _self_attention(spec, gen, sizes: dict, config: dict) -> Case:
    B, T, D = sizes["B"], sizes["T"], sizes["D"]
    inputs = {"x": _randn(gen, B, T, D), "mask": random_mask(gen, B, T, T)}
    return Case("", inputs, dict(sizes, Tq=T, Tk=T), config, random_params(gen, spec.layer_shapes(config),
                                                                            config["bias"]))


def mha_fused(spec, gen) -> Setup:
    sizes = {"B": 4, "H": 5, "T": 6, "d": 7, "D": 35}
    case = _self_attention(spec, gen, sizes, {"d_model": 35, "num_heads": 5, "bias": True})
    return Setup(sizes, "x (B, T, D), mask (B, T, T)", [("forward(x, mask)", _module(spec, case))])


def gqa(spec, gen) -> Setup:
    sizes = {"B": 2, "H": 12, "Hkv": 3, "T": 5, "d": 7, "D": 84}
    case = _self_attention(spec, gen, sizes, {"d_model": 84, "num_heads": 12, "num_kv_heads": 3, "bias": False})
    return Setup(sizes, "x (B, T, D), mask (B, T, T)", [("forward(x, mask)", _module(spec, case))])


def rope(spec, gen) -> Setup:
    B, H, T, d = 4, 5, 6, 16
    positions = 2 + torch.randperm(30, generator=gen)[:T].sort().values  # do not start at 0
    case = Case("", {"x": _randn(gen, B, H, T, d), "positions": positions}, {"base": 10000.0})
    return Setup({"B": B, "H": H, "T": T, "d": d}, "x (B, H, T, d), positions (T,)",
                 [("apply_rope(x, positions)", _function(spec, case))])


def kv_cache(spec, gen) -> Setup:
    B, H, Hkv, d, T_past, T_new = 3, 20, 5, 12, 9, 7
    D = H * d
    config = {"d_model": D, "num_heads": H, "num_kv_heads": Hkv, "rope_base": 10000.0}
    inputs = {"x": _randn(gen, B, T_new, D), "k_past": _randn(gen, B, Hkv, T_past, d),
              "v_past": _randn(gen, B, Hkv, T_past, d)}
    dims = {"B": B, "H": H, "Hkv": Hkv, "d": d, "D": D, "T": T_new, "T_past": T_past, "steps": (T_new,)}
    case = Case("", inputs, dims, config, random_params(gen, spec.layer_shapes(config), False))
    return Setup({"B": B, "H": H, "Hkv": Hkv, "d": d, "D": D, "T_past": T_past, "T_new": T_new},
                 _say("given_kv_cache"),
                 [("forward(x, cache)", _module(spec, case))])


def flash(spec, gen) -> Setup:
    B, H, Tq, Tk, d, block = 2, 3, 8, 12, 5, 4  # whole blocks only: every pass of the loop has one shape
    q, k, v = _randn(gen, B, H, Tq, d), _randn(gen, B, H, Tk, d), _randn(gen, B, H, Tk, d)

    def prepare(target):
        # called directly: the checker's memory watch is for judging, and this file has passed
        return lambda: target(q.clone(), k.clone(), v.clone(), causal=True, block_size=block)
    return Setup({"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "block_size": block},
                 _say("given_flash"),
                 [("flash_attention(q, k, v, causal=True, block_size)", prepare)])


def sliding_window(spec, gen) -> Setup:
    B, H, Tq, Tk, d, window = 2, 3, 5, 9, 4, 6  # Tk - Tq = 4 < window: the first queries' windows are cut
    inputs = {"q": _randn(gen, B, H, Tq, d), "k": _randn(gen, B, H, Tk, d), "v": _randn(gen, B, H, Tk, d),
              "sinks": _randn(gen, H)}
    case = Case("", inputs, {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "window": window})
    return Setup({"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "window": window},
                 _say("given_sliding_window"),
                 [("sliding_window_attention(q, k, v, window, sinks)", _function(spec, case))])


def llama_block(spec, gen) -> Setup:
    B, H, Hkv, T, d, d_ff = 2, 6, 3, 5, 4, 7  # D = 24; no size equals another (d/2 = 2 is RoPE's own literal)
    D = H * d
    config = {"d_model": D, "num_heads": H, "num_kv_heads": Hkv, "d_ff": d_ff, "rope_base": 10000.0, "eps": 1e-6}
    from attn_drill.judge.specs.llama_block import block_params

    positions = 1 + torch.randperm(20, generator=gen)[:T].sort().values  # uneven, not from 0
    case = Case("", {"x": _randn(gen, B, T, D), "positions": positions},
                {"B": B, "H": H, "Hkv": Hkv, "T": T, "d": d, "D": D, "d_ff": d_ff}, config, block_params(gen, config))
    return Setup({"B": B, "H": H, "Hkv": Hkv, "T": T, "d": d, "D": D, "d_ff": d_ff},
                 "x (B, T, D), positions (T,)", [("forward(x, positions)", _module(spec, case))])


def alibi(spec, gen) -> Setup:
    B, H, Tq, Tk, d = 2, 6, 5, 9, 8  # 6 heads: the slopes' rule for a count that is not a power of 2 runs
    inputs = {"q": _randn(gen, B, H, Tq, d), "k": _randn(gen, B, H, Tk, d), "v": _randn(gen, B, H, Tk, d)}
    case = Case("", inputs, {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "causal": True})
    return Setup({"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d}, _say("given_alibi"),
                 [("alibi_attention(q, k, v, causal=True)", _function(spec, case))])


def linear_attention(spec, gen) -> Setup:
    # causal: T > B * d * dv, so the running sums are allowed even one head at a time ((B, T, d, dv) < T * T)
    B, H, T, d, dv = 2, 3, 53, 4, 6
    inputs = {"q": _randn(gen, B, H, T, d), "k": _randn(gen, B, H, T, d), "v": _randn(gen, B, H, T, dv)}
    case = Case("", inputs, {"B": B, "H": H, "T": T, "d": d, "dv": dv, "causal": True, "eps": 1e-6})
    return Setup({"B": B, "H": H, "T": T, "d": d, "dv": dv}, "q, k (B, H, T, d), v (B, H, T, dv), causal=True",
                 [("linear_attention(q, k, v, causal=True)", _function(spec, case))])


def attention_backward(spec, gen) -> Setup:
    B, H, Tq, Tk, d, dv = 2, 3, 5, 7, 4, 6  # Tq != Tk and d != dv: every gradient's shape names its axes
    inputs = {"q": _randn(gen, B, H, Tq, d), "k": _randn(gen, B, H, Tk, d), "v": _randn(gen, B, H, Tk, dv),
              "dout": _randn(gen, B, H, Tq, dv), "mask": random_mask(gen, B, 1, Tq, Tk)}
    case = Case("", inputs, {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "dv": dv})
    return Setup({"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "dv": dv},
                 "q (B, H, Tq, d), k (B, H, Tk, d), v (B, H, Tk, dv), dout (B, H, Tq, dv), mask",
                 [("attention_backward(q, k, v, dout, mask)", _function(spec, case))])


def paged_attention(spec, gen) -> Setup:
    from attn_drill.judge.specs.paged_attention import paged_case

    # no size equals another: B=4 H=12 Hkv=6 d=8 block_size=5, 3 blocks a table (T = 15), a pool of 11
    case = paged_case(gen, 12, 6, 8, 5, [12, 5, 1, 7], 4)
    dims = case.dims
    return Setup({"B": dims["B"], "H": dims["H"], "Hkv": dims["Hkv"], "d": dims["d"],
                  "block_size": dims["block_size"], "num_blocks": dims["num_blocks"],
                  "max_blocks": dims["max_blocks"], "T": dims["Tk"]},
                 _say("given_paged_attention"),
                 [("paged_attention(q, k_cache, v_cache, block_table, lengths)", _function(spec, case))])


def mla(spec, gen) -> Setup:
    # no size equals another (d_rope/2 = 4 is none of them; d = d_nope + d_rope is the query head's width)
    B, H, T_past, T_new, r, dn, dr, dv, D = 3, 5, 9, 7, 11, 6, 8, 10, 13
    config = {"d_model": D, "num_heads": H, "kv_rank": r, "d_nope": dn, "d_rope": dr, "d_v": dv, "rope_base": 10000.0}
    from attn_drill.judge.specs.mla import mla_params

    inputs = {"x": _randn(gen, B, T_new, D), "c_past": _randn(gen, B, T_past, r), "pe_past": _randn(gen, B, T_past, dr),
              "z": _randn(gen, B, T_new, r)}
    dims = {"B": B, "H": H, "T": T_new, "T_past": T_past, "steps": (T_new,), "r": r}
    case = Case("", inputs, dims, config, mla_params(gen, config))
    return Setup({"B": B, "H": H, "T_past": T_past, "T_new": T_new, "kv_rank": r, "d_nope": dn, "d_rope": dr,
                  "d_v": dv, "d": dn + dr, "D": D},
                 _say("given_mla"),
                 [("forward(x, cache)", _module(spec, case))])


def self_attention(spec, gen) -> Setup:
    sizes = {"B": 4, "T": 5, "dim": 11, "dk": 6, "dv": 7}
    config = {"dim": 11, "dk": 6, "dv": 7, "bias": True}
    inputs = {"x": _randn(gen, 4, 5, 11), "mask": random_mask(gen, 4, 5, 5)}
    case = Case("", inputs, dict(sizes, Tq=5, Tk=5, d=6, D=11), config,
                random_params(gen, spec.layer_shapes(config), True))
    return Setup(sizes, "x (B, T, dim), mask (B, T, T)", [("forward(x, mask)", _module(spec, case))])


def mha_dims(spec, gen) -> Setup:
    B, H, Tq, Tk, dim, dk, dv = 4, 5, 6, 7, 11, 8, 9
    config = {"dim": dim, "num_heads": H, "dk": dk, "dv": dv, "bias": True}
    inputs = {"query": _randn(gen, B, Tq, dim), "key": _randn(gen, B, Tk, dim), "value": _randn(gen, B, Tk, dim),
              "mask": random_mask(gen, B, Tq, Tk)}
    sizes = {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "dim": dim, "dk": dk, "dv": dv}
    case = Case("", inputs, dict(sizes, d=dk, D=dim), config, random_params(gen, spec.layer_shapes(config), True))
    return Setup(sizes, _say("given_mha_dims"),
                 [("forward(query, key, value, mask)", _module(spec, case))])


def relative_position(spec, gen) -> Setup:
    sizes = {"B": 4, "H": 5, "T": 6, "d": 7, "D": 35}
    config = {"d_model": 35, "num_heads": 5, "max_distance": 11}  # the table (23, d): no axis of the case
    case = _self_attention(spec, gen, sizes, config | {"bias": True})
    case.config = config
    case.dims["max_distance"] = 11
    case.params["rel_k.weight"] = _randn(gen, 23, 7)
    return Setup(sizes, "x (B, T, D), mask (B, T, T); max_distance = 11",
                 [("forward(x, mask)", _module(spec, case))])


def encoder_layer(spec, gen) -> Setup:
    sizes = {"B": 4, "H": 5, "T": 6, "d": 7, "D": 35, "d_ff": 11}
    config = {"d_model": 35, "num_heads": 5, "d_ff": 11, "norm_first": False}
    inputs = {"x": _randn(gen, 4, 6, 35), "mask": random_mask(gen, 4, 6, 6)}
    case = Case("", inputs, dict(sizes, Tq=6, Tk=6), config, layer_params(gen, spec.attns, 35, 11, spec.norms))
    return Setup(sizes, _say("given_encoder_layer"), [("forward(x, mask)", _module(spec, case))])


def decoder_layer(spec, gen) -> Setup:
    sizes = {"B": 4, "H": 5, "Tq": 6, "Tk": 8, "d": 7, "D": 35, "d_ff": 11}
    config = {"d_model": 35, "num_heads": 5, "d_ff": 11, "norm_first": False}
    inputs = {"x": _randn(gen, 4, 6, 35), "memory": _randn(gen, 4, 8, 35),
              "tgt_mask": self_visible(random_mask(gen, 4, 6, 6)), "memory_mask": random_mask(gen, 4, 6, 8)}
    case = Case("", inputs, sizes, config, layer_params(gen, spec.attns, 35, 11, spec.norms))
    return Setup(sizes, _say("given_decoder_layer"),
                 [("forward(x, memory, tgt_mask, memory_mask)", _module(spec, case))])


SETUPS = {"softmax": softmax, "sdpa": sdpa, "masks": masks, "mha": mha, "mha-fused": mha_fused, "gqa": gqa,
          "rope": rope, "kv-cache": kv_cache, "flash": flash, "self-attention": self_attention, "mha-dims": mha_dims,
          "relative-position": relative_position, "encoder-layer": encoder_layer, "decoder-layer": decoder_layer,
          "sliding-window": sliding_window, "llama-block": llama_block, "mla": mla,
          "alibi": alibi, "linear-attention": linear_attention,
          "attention-backward": attention_backward, "paged-attention": paged_attention}
