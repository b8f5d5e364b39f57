"""alibi: alibi_slopes(num_heads) and alibi_attention(q, k, v, causal=True) -> (out, weights).

A case calls both: the attention on its inputs, and alibi_slopes for the case's head count (cast to the inputs'
dtype and device by the checker, as the attention itself may do); the slopes are the third output. The cases
use power-of-2 head counts and others (3, 6, 12), causal and not (every non-causal case with Tq >= 2, where
fairseq's `+ m * j` is no longer the distance), Tq < Tk and Tq == Tk.
"""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.specs.base import Case, Spec, reference_module, resolve_function
from attn_drill.judge.variants.alibi import AlibiKnobs, alibi_attention


class AlibiSpec(Spec):
    id = "alibi"
    file = "alibi.py"
    name = "alibi_attention"
    outputs = ("out", "weights", "slopes")
    axes = {"out": ("batch", "head", "query", "feature"), "weights": ("batch", "head", "query", "key"),
            "slopes": ("head",)}
    maps = "returned"  # attn-drill show
    signature = "alibi_attention(q, k, v, causal=True)"
    float32_convention = True  # float32 slopes cast to the inputs' dtype are right: no precision-loss
    # (the model answer's one other return that a name can reach is alibi_slopes': the weighted sum returned is
    # structure, which step names never rename)
    index_steps = True  # Spec.index_steps: the positions it compares are steps
    step_names = {"p": "positions", "j": "positions", "m": "slopes", "penalty": "bias", "return": "slopes"}

    def resolve(self, module):
        fn, bad = resolve_function(module, self.name, self.signature, [((1, 2, 3), {}), ((1, 2, 3), {"causal": False})])
        if bad is None:
            _, bad = resolve_function(module, "alibi_slopes", "alibi_slopes(num_heads)", [((4,), {})])
        return (None, bad) if bad else (fn, None)

    def cases(self, gen):
        def case(B, H, Tq, Tk, d, causal):
            q, k, v = (torch.randn(B, H, T, d, generator=gen, dtype=torch.float64) for T in (Tq, Tk, Tk))
            label = f"B={B} H={H} Tq={Tq} Tk={Tk} d={d}, causal={causal}"
            return Case(label, {"q": q, "k": k, "v": v}, {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d,
                                                          "causal": causal})

        return [
            case(2, 8, 5, 7, 8, True),  # a power of 2; the queries are the last 5 of 7 positions
            case(2, 6, 6, 6, 8, False),  # 6 heads (p = 4, two slopes from the 8-head sequence); no mask
            case(1, 12, 4, 9, 4, True),  # 12 heads (p = 8)
            case(2, 4, 3, 8, 16, False),  # no mask with Tq < Tk: the distance runs both ways
            case(3, 3, 7, 7, 8, True),  # 3 heads (p = 2), B != H
        ]

    def empty_row_case(self, gen):
        return None  # every query sees itself

    def hides(self, case) -> bool:
        return case.dims["causal"]

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False):
        x = case.cast(dtype, device)
        if grad:
            for n in ("q", "k", "v"):
                x[n].requires_grad_(True)
        out = target(x["q"], x["k"], x["v"], causal=case.dims["causal"])
        slopes_fn = target.__globals__.get("alibi_slopes") if hasattr(target, "__globals__") else None
        slopes = slopes_fn(case.dims["H"]) if slopes_fn is not None else None
        if isinstance(slopes, (list, tuple)):  # numbers, not a tensor: read as the float32 the contract asks for
            slopes = torch.tensor(slopes, dtype=torch.float32)
        if isinstance(out, tuple) and len(out) == 2 and isinstance(slopes, torch.Tensor):
            out = (*out, slopes.to(device=device, dtype=dtype))
        return out, None, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        x = {n: v.double() for n, v in case.cast(dtype).items()}
        if grad:
            for n in ("q", "k", "v"):
                x[n].requires_grad_(True)
        ref = reference_module(self.file)
        out, weights = ref.alibi_attention(x["q"], x["k"], x["v"], causal=case.dims["causal"])
        return (out, weights, ref.alibi_slopes(case.dims["H"]).double()), None, x

    def variant(self, case, knobs):
        """knobs: the attention Knobs every exercise shares, or ALiBi's own AlibiKnobs."""
        kn = knobs if isinstance(knobs, AlibiKnobs) else AlibiKnobs(attn=knobs)
        x = case.inputs
        return alibi_attention(x["q"], x["k"], x["v"], case.dims["causal"], kn)

    def raw_scores(self, case):
        return case.inputs["q"] @ case.inputs["k"].transpose(-2, -1)

    def visible(self, case):
        if not case.dims["causal"]:
            return None
        Tq, Tk = case.dims["Tq"], case.dims["Tk"]
        return torch.ones(Tq, Tk, dtype=torch.bool).tril(Tk - Tq)

    def expected_return(self):
        return t("evidence.modern.specs_alibi.expected_return")

    def expected_shapes(self, case):
        q, k = case.inputs["q"], case.inputs["k"]
        return {"out": tuple(q.shape), "weights": tuple(q.shape[:-1]) + (k.size(-2),), "slopes": (case.dims["H"],)}

    def grad_inputs(self, x, module):
        return {n: x[n] for n in ("q", "k", "v")}
