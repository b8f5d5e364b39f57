"""sliding-window: sliding_window_attention(q, k, v, window, sinks=None) -> (out, weights).

The window is built inside the user's code from `window` and the positions, so it is no input: `visible` says
which keys the contract lets each query see, and the cases vary what a careless window gets wrong. Every query
sees at least itself, so no row is ever empty.
"""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.specs.base import Case, Spec, reference_module, resolve_function

from attn_drill.judge.variants.window import WindowKnobs, visible, window_attention


class SlidingWindowSpec(Spec):
    id = "sliding-window"
    file = "sliding_window.py"
    name = "sliding_window_attention"
    outputs = ("out", "weights")
    axes = {"out": ("batch", "head", "query", "feature"), "weights": ("batch", "head", "query", "key")}
    maps = "returned"  # attn-drill show
    signature = "sliding_window_attention(q, k, v, window, sinks=None)"
    step_names = {"p": "window", "j": "window", "visible": "window", "sink": "sink", "seen": "window"}

    def resolve(self, module):
        calls = [((1, 2, 3, 4), {}), ((1, 2, 3, 4), {"sinks": None})]
        return resolve_function(module, self.name, self.signature, calls)

    def cases(self, gen):
        def case(B, H, Tq, Tk, d, window, sinks):
            q, k, v = (torch.randn(B, H, T, d, generator=gen, dtype=torch.float64) for T in (Tq, Tk, Tk))
            # sink logits the size of the scores (spread ~1 once scaled), so the sink takes a real share of a row
            s = 0.5 + torch.randn(H, generator=gen, dtype=torch.float64) if sinks else None
            label = t("evidence.cache.specs_sliding_window.label", B=B, H=H, Tq=Tq, Tk=Tk, d=d, window=window,
                      sinks=t("evidence.cache.specs_sliding_window.sinks", values=[round(float(x), 2) for x in s])
                      if sinks else t("evidence.cache.specs_sliding_window.no_sinks"))
            dims = {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "window": window}
            return Case(label, {"q": q, "k": k, "v": v, "sinks": s}, dims)

        return [
            case(2, 3, 6, 9, 8, 3, True),  # Tq < Tk (the queries are the last 6), every edge of the window shows
            case(2, 3, 7, 7, 8, 4, False),  # square: the top-left rows see fewer than window keys
            case(1, 2, 5, 8, 4, 1, True),  # window == 1: itself only; with a sink its weight is below 1
            case(3, 2, 4, 10, 4, 5, False),  # B != H the other way, Tk - Tq = 6 > window
            case(2, 2, 9, 9, 16, 2, True),  # a wide head, the narrowest window with a choice
        ]

    def example(self, gen):
        """What `attn-drill show` draws: the band of a window shorter than Tk, and a sink that takes a share."""
        q, k, v = (torch.randn(1, 3, T, 8, generator=gen, dtype=torch.float64) for T in (6, 8, 8))
        sinks = torch.tensor([1.5, -1.0, 0.3], dtype=torch.float64)
        label = t("evidence.cache.specs_sliding_window.label", B=1, H=3, Tq=6, Tk=8, d=8, window=3,
                  sinks=t("evidence.cache.specs_sliding_window.sinks", values=[1.5, -1.0, 0.3]))
        return Case(label, {"q": q, "k": k, "v": v, "sinks": sinks},
                    {"B": 1, "H": 3, "Tq": 6, "Tk": 8, "d": 8, "window": 3})

    def empty_row_case(self, gen):
        return None  # every query sees itself

    def hides(self, case) -> bool:
        return True

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False):
        x = case.cast(dtype, device)
        if grad:
            for n in ("q", "k", "v", "sinks"):
                if x[n] is not None:
                    x[n].requires_grad_(True)
        kwargs = {"sinks": x["sinks"]} if x["sinks"] is not None else {}
        return target(x["q"], x["k"], x["v"], case.dims["window"], **kwargs), None, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        x = {n: (t.double() if t is not None else t) for n, t in case.cast(dtype).items()}
        if grad:
            for n in ("q", "k", "v", "sinks"):
                if x[n] is not None:
                    x[n].requires_grad_(True)
        fn = reference_module(self.file).sliding_window_attention
        return fn(x["q"], x["k"], x["v"], case.dims["window"], x["sinks"]), None, x

    def variant(self, case, knobs):
        """knobs: the attention Knobs every exercise shares, or the window's own WindowKnobs."""
        x = case.inputs
        if isinstance(knobs, WindowKnobs):
            return window_attention(x["q"], x["k"], x["v"], case.dims["window"], x["sinks"], wk=knobs)
        return window_attention(x["q"], x["k"], x["v"], case.dims["window"], x["sinks"], knobs=knobs)

    def raw_scores(self, case):
        return case.inputs["q"] @ case.inputs["k"].transpose(-2, -1)

    def visible(self, case, knobs: WindowKnobs = WindowKnobs()):
        return visible(case.dims["Tq"], case.dims["Tk"], case.dims["window"], knobs)

    def scale_names(self, case):
        names = super().scale_names(case)
        H, d = case.dims["H"], case.dims["d"]
        names[f"1/sqrt({H * d}) = 1/sqrt(H * d)"] = (H * d) ** -0.5
        return names

    def expected_shapes(self, case):
        q, k = case.inputs["q"], case.inputs["k"]
        return {"out": tuple(q.shape), "weights": tuple(q.shape[:-1]) + (k.size(-2),)}

    def grad_inputs(self, x, module):
        return {n: x[n] for n in ("q", "k", "v", "sinks") if x[n] is not None}
