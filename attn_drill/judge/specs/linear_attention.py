"""linear-attention: linear_attention(q, k, v, causal=False, eps=1e-6) -> out.

Every call runs under memory.Allocations: in a causal case a tensor of T * T entries or more per (batch, head)
stops the code (full-scores-materialized), as in flash. The causal cases have T > 2 * d * dv, so the running
sums (B, H, T, d, dv) fit under the limit and a (T, T) matrix does not. The cases pass eps = 0.5 too, where the
denominator's eps shows, and d != dv.
"""

from __future__ import annotations

import torch

from attn_drill.judge import memory
from attn_drill.judge.specs.base import Case, Spec, reference_module, resolve_function
from attn_drill.judge.specs.flash import user_file
from attn_drill.judge.variants.linear import LinearKnobs, linear_attention


class LinearAttentionSpec(Spec):
    id = "linear-attention"
    file = "linear_attention.py"
    name = "linear_attention"
    outputs = ("out",)
    axes = {"out": ("batch", "head", "position", "feature")}
    signature = "linear_attention(q, k, v, causal=False, eps=1e-6)"
    # (the division `out = num / (den + eps)` is the normalising step, not a scale; `fq @ S` no scores)
    step_names = {"fq, fk": "feature map", "S": "sums", "z": "sums", "num": "numerator", "den": "normaliser",
                  "out": "normaliser"}
    names_over_calls = True

    def resolve(self, module):
        calls = [((1, 2, 3), {}), ((1, 2, 3), {"causal": True, "eps": 0.5})]
        return resolve_function(module, self.name, self.signature, calls)

    def cases(self, gen):
        def case(B, H, T, d, dv, causal, eps):
            q, k = (torch.randn(B, H, T, d, generator=gen, dtype=torch.float64) for _ in range(2))
            v = torch.randn(B, H, T, dv, generator=gen, dtype=torch.float64)
            label = f"B={B} H={H} T={T} d={d} dv={dv}, causal={causal}, eps={eps:g}"
            return Case(label, {"q": q, "k": k, "v": v}, {"B": B, "H": H, "T": T, "Tq": T, "Tk": T, "d": d,
                                                          "dv": dv, "causal": causal, "eps": eps})

        return [
            case(2, 2, 30, 4, 3, True, 1e-6),  # T = 30 > 2 * d * dv = 24: running sums allowed, (T, T) not
            case(2, 3, 9, 4, 6, False, 1e-6),  # d != dv
            case(1, 2, 40, 3, 5, True, 0.5),  # a large eps: where it goes shows
            case(3, 2, 7, 5, 3, False, 0.5),
            case(2, 1, 21, 2, 4, True, 1e-6),  # d * dv = 8: T = 21 > 16
        ]

    def empty_row_case(self, gen):
        return None  # no mask: every query has keys

    def hides(self, case) -> bool:
        return case.dims["causal"]

    def limit(self, case) -> int | None:
        """Entries per (batch, head) at which a tensor is a (T, T) matrix: causal cases only."""
        return case.dims["T"] ** 2 if case.dims["causal"] else None

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False):
        x = case.cast(dtype, device)
        if grad:
            for n in ("q", "k", "v"):
                x[n].requires_grad_(True)
        watch = memory.Allocations(user_file(target), limit=self.limit(case), heads=(case.dims["B"], case.dims["H"]),
                                   tokens=case.dims["T"])  # (B * H * T, d, dv): one outer product per position
        with watch:
            out = target(x["q"], x["k"], x["v"], causal=case.dims["causal"], eps=case.dims["eps"])
        if watch.too_big:  # the code caught the TensorTooLarge raised inside it
            raise memory.TensorTooLarge(watch.too_big, watch.limit)
        return out, None, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        x = {n: t.double() for n, t in case.cast(dtype).items()}
        if grad:
            for n in ("q", "k", "v"):
                x[n].requires_grad_(True)
        fn = reference_module(self.file).linear_attention
        return fn(x["q"], x["k"], x["v"], causal=case.dims["causal"], eps=case.dims["eps"]), None, x

    def variant(self, case, knobs):
        kn = knobs if isinstance(knobs, LinearKnobs) else LinearKnobs()
        x = case.inputs
        return (linear_attention(x["q"], x["k"], x["v"], case.dims["causal"], case.dims["eps"], kn),)

    def visible(self, case):
        return None

    def expected_shapes(self, case):
        return {"out": tuple(case.inputs["v"].shape)}

    def grad_inputs(self, x, module):
        return {n: x[n] for n in ("q", "k", "v")}
