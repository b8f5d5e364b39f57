"""masks: causal_mask(tq, tk=None, device=None), padding_mask(lengths, t), attention_mask(lengths, t, causal=False).

Three functions in one file; each case calls one of them. The outputs are bool masks (True = may attend).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode

from attn_drill.i18n import t
from attn_drill.judge.specs.base import Case, Spec, reference_module, resolve_function

NAMES = ("causal_mask", "padding_mask", "attention_mask")
SIGNATURES = {  # how the checker calls each one: (positional, keyword) argument sets it must accept
    "causal_mask": ("causal_mask(tq, tk=None, device=None)", [((5,), {}), ((4, 7), {"device": None})]),
    "padding_mask": ("padding_mask(lengths, t)", [((None, 6), {})]),
    "attention_mask": ("attention_mask(lengths, t, causal=False)", [((None, 6), {}), ((None, 6), {"causal": True})]),
}


@dataclass(frozen=True)
class MaskKnobs:
    """One known mistake per knob; the defaults build the right masks."""

    inverted: bool = False  # True where the key must be hidden (nn.MultiheadAttention's convention)
    diagonal: int = 0  # causal: -1 hides the diagonal (j < i), +1 shows one future key (j <= i + 1)
    top_left: bool = False  # causal: j <= i whatever tq and tk (SDPA's is_causal=True)
    length_shift: int = 0  # padding: +1 keeps one key too many (j <= length), -1 one too few
    rows: str = "keys"  # attention_mask: keys (right) | queries (lengths hide query rows) | both
    part: str = ""  # inverted in one part only: "causal" (the triangle) or "padding" (the lengths)
    offset_sign: int = 1  # causal: -1 takes the bottom-right offset with the wrong sign (j <= i - (tk - tq))


RIGHT = MaskKnobs()


def causal(tq: int, tk: int, knobs: MaskKnobs = RIGHT) -> torch.Tensor:
    offset = (0 if knobs.top_left else knobs.offset_sign * (tk - tq)) + knobs.diagonal
    mask = torch.arange(tk)[None, :] <= torch.arange(tq)[:, None] + offset  # (tq, tk)
    return ~mask if knobs.part == "causal" else mask


def padding(lengths: torch.Tensor, t: int, knobs: MaskKnobs = RIGHT) -> torch.Tensor:
    mask = torch.arange(t)[None, :] < (lengths + knobs.length_shift)[:, None]  # (B, t)
    return ~mask if knobs.part == "padding" else mask


def attention(lengths: torch.Tensor, t: int, is_causal: bool, knobs: MaskKnobs = RIGHT) -> torch.Tensor:
    pad = padding(lengths, t, knobs)
    keys, queries = pad[:, None, None, :], pad[:, None, :, None]  # (B, 1, 1, t), (B, 1, t, 1)
    mask = {"keys": keys, "queries": queries, "both": keys & queries}[knobs.rows]
    if is_causal:
        mask = mask & causal(t, t, knobs)
    return mask.expand(-1, 1, t, t)  # (B, 1, t, t)


def variant(case: Case, knobs: MaskKnobs) -> torch.Tensor:
    """The mask the case's function gives with the knobs' mistakes."""
    c = case.config
    if c["fn"] == "causal_mask":
        mask = causal(c["tq"], c["tq"] if c.get("tk") is None else c["tk"], knobs)
    elif c["fn"] == "padding_mask":
        mask = padding(case.inputs["lengths"], c["t"], knobs)
    else:
        mask = attention(case.inputs["lengths"], c["t"], c.get("causal", False), knobs)
    return ~mask if knobs.inverted else mask


class MasksSpec(Spec):
    id = "masks"
    file = "masks.py"
    name = "causal_mask"
    outputs = ("mask",)
    axes = {"mask": ("batch", "head", "row", "key")}
    differentiable = False  # booleans: no gradients stage
    float_inputs = False  # lengths are integers: no dtypes stage

    def resolve(self, module):
        fns = {}
        for name in NAMES:
            expected, calls = SIGNATURES[name]
            fns[name], bad = resolve_function(module, name, expected, calls,
                                              t("evidence.attention.specs_masks.task_asks", names=", ".join(NAMES)))
            if bad:
                return None, bad
        return fns, None

    def cases(self, gen):
        def lengths(t, *others):
            """Lengths t and 1 (a full and a one-token sequence) and others, in a random order."""
            ls = torch.tensor([t, 1, *others], dtype=torch.int64)
            return ls[torch.randperm(len(ls), generator=gen)]

        def mid(t):
            return int(torch.randint(2, t, (), generator=gen))

        return [
            mask_case("attention_mask", lengths=lengths(6, mid(6)), t=6, causal=True),
            mask_case("causal_mask", tq=5),  # tk left at its default
            mask_case("causal_mask", tq=4, tk=7, device=True),  # fewer queries than keys: a KV cache
            mask_case("causal_mask", tq=6, tk=3),  # more queries than keys: the first rows see nothing
            mask_case("causal_mask", tq=1, tk=6),  # one decoding step sees every key
            mask_case("padding_mask", lengths=lengths(6, mid(6)), t=6),
            mask_case("padding_mask", lengths=lengths(5), t=5),
            mask_case("attention_mask", lengths=lengths(5, mid(5)), t=5),
        ]

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False):
        c = case.config
        x = {n: t.to(device=device, copy=True) for n, t in case.inputs.items()}  # int64 stays int64; a copy
        if str(device) == "cpu":
            return run_one(target, c, x, device), None, x
        with ReadsOnMeta(device):
            result = run_one(target, c, x, device)
            others_follow(target, device)
        return result, None, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        x = {n: t.clone() for n, t in case.inputs.items()}
        return run_one(vars(reference_module(self.file)), case.config, x, "cpu"), None, x

    def variant(self, case, knobs):
        return (variant(case, knobs),)

    def unpack(self, result):
        # a float or integer 0/1 mask is not a mask here: SDPA would add it to the scores
        if isinstance(result, torch.Tensor) and result.dtype == torch.bool:
            return (result,)
        return None

    def expected_return(self):
        return t("evidence.attention.specs_masks.bool_mask")

    def expected_shapes(self, case):
        c = case.config
        if c["fn"] == "causal_mask":
            return {"mask": (c["tq"], c["tq"] if c.get("tk") is None else c["tk"])}
        B = case.inputs["lengths"].numel()
        return {"mask": (B, c["t"]) if c["fn"] == "padding_mask" else (B, 1, c["t"], c["t"])}

    def grad_inputs(self, x, module):
        return {}


def mask_case(fn: str, **config) -> Case:
    lengths = config.pop("lengths", None)
    inputs = {} if lengths is None else {"lengths": lengths}
    return Case(call_label(fn, config, lengths), inputs, {}, config={"fn": fn, **config})


def call_label(fn: str, c: dict, lengths) -> str:
    if fn == "causal_mask":
        args = [str(c["tq"])] + ([str(c["tk"])] if c.get("tk") is not None else [])
        return f"causal_mask({', '.join(args)}{', device=...' if c.get('device') else ''})" + (
            "" if c.get("tk") is not None else t("evidence.attention.specs_masks.tk_default"))
    extra = ", causal=True" if c.get("causal") else ""
    return f"{fn}(lengths={lengths.tolist()}, t={c['t']}{extra})"


def run_one(fns, c: dict, x: dict, device):
    """Call the case's function as the contract says."""
    fn = fns[c["fn"]]
    if c["fn"] == "causal_mask":
        args = (c["tq"],) if c.get("tk") is None else (c["tq"], c["tk"])
        return fn(*args, device=device) if c.get("device") or str(device) != "cpu" else fn(*args)
    if c["fn"] == "padding_mask":
        return fn(x["lengths"], c["t"])
    return fn(x["lengths"], c["t"], causal=True) if c.get("causal") else fn(x["lengths"], c["t"])


class ReadsOnMeta(TorchFunctionMode):
    """lengths.tolist() is fine on any real device, but on the meta device (which holds no numbers) it raises
    "Cannot copy out of meta tensor", the very message of a meta tensor written into a CPU one. Tell them apart
    by the op that failed, and say the former without the word that would make it a device finding."""

    def __init__(self, device):
        super().__init__()
        self.meta = torch.device(device).type == "meta"

    def __torch_function__(self, func, types, args=(), kwargs=None):
        try:
            return func(*args, **(kwargs or {}))
        except NotImplementedError as e:
            if self.meta and getattr(func, "__name__", "") == "tolist" and "copy out of meta" in str(e):
                raise RuntimeError("meta tensors hold no values for .tolist() to read (fine on a GPU)") from None
            raise


def others_follow(fns, device) -> None:
    """Off the CPU (the device stage runs one case there), call all three functions: each result must come
    back on the device asked for. Errors that are not about devices say nothing here and are left out."""
    lengths = torch.tensor([2, 4], device=device)
    calls = {"causal_mask": ((3, 5), {"device": device}), "padding_mask": ((lengths, 4), {}),
             "attention_mask": ((lengths, 4), {"causal": True})}
    for name, (args, kwargs) in calls.items():
        try:
            out = fns[name](*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - user code
            msg = str(e)
            if "device" in msg.lower() or "copy out of meta" in msg:
                raise
            continue
        if isinstance(out, torch.Tensor) and out.device.type != torch.device(device).type:
            asked = f"device={device!r}" if name == "causal_mask" else f"lengths on the {device} device"
            raise RuntimeError(f"{name} with {asked} returned its mask on the {out.device.type} device")
