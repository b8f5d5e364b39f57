"""rope: apply_rope(x, positions, base=10000.0) -> x rotated, half-split pairs (i, i + d/2)."""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.probes import rope as rope_fit
from attn_drill.judge.specs.base import Case, Spec, reference_module, resolve_function

SIGNATURE = "apply_rope(x, positions, base=10000.0)"
DEFAULT_BASE = 10000.0
MAX_POSITION = 100  # angles computed in float32 stay within the float64 tolerance up to here (~128)


def random_positions(gen, shape: tuple, low: int, high: int, ordered: bool = True) -> torch.Tensor:
    """int64 positions in [low, high), distinct within a row. With low >= 1 a sorted row is above arange(T) at
    every token (and so is any row with low >= T): code that ignores the positions is wrong everywhere."""
    rows = []
    for _ in range(shape[0] if len(shape) == 2 else 1):
        row = low + torch.randperm(high - low, generator=gen)[: shape[-1]]
        rows.append(row.sort().values if ordered else row)
    out = torch.stack(rows)
    return out if len(shape) == 2 else out[0]


class RopeSpec(Spec):
    # localise.py: the reference's variables, named as steps
    float32_convention = True  # angles in float32 are right (as Hugging Face computes them): no precision-loss
    step_names = {"inv_freq": "frequencies", "theta": "angles", "cos, sin": "angles", "x1, x2": "pairs",
                  "return": "rotation"}
    id = "rope"
    file = "rope.py"
    name = "apply_rope"
    outputs = ("out",)
    axes = {"out": ("batch", "head", "token", "feature")}

    def resolve(self, module):
        calls = [((1, 2), {}), ((1, 2), {"base": 100.0})]  # base has a default, and is passed by name
        return resolve_function(module, self.name, SIGNATURE, calls)

    def cases(self, gen):
        def case(B, H, T, d, positions, base=None, zero=None):
            x = torch.randn(B, H, T, d, generator=gen, dtype=torch.float64)
            if zero is not None:
                x[zero] = 0.0  # a zero vector (a padded token's): it must stay zero
            said = t("evidence.cache.specs_rope.default_base") if base is None else f"base={base:g}"
            label = (t("evidence.cache.specs_rope.label", x=tuple(x.shape), shape=tuple(positions.shape),
                       positions=positions.tolist(), said=said)
                     + (t("evidence.cache.specs_rope.zero", index=list(zero)) if zero is not None else ""))
            return Case(label, {"x": x, "positions": positions},
                        {"B": B, "H": H, "T": T, "d": d, "base": DEFAULT_BASE if base is None else base},
                        config={} if base is None else {"base": base})

        return [
            # small positions first: the dtype and device stages run this case, and angles computed in half
            # precision are still within half-precision tolerance here
            case(2, 3, 5, 8, random_positions(gen, (5,), 2, 25)),
            case(2, 2, 6, 12, random_positions(gen, (2, 6), 1, 60), base=100.0),  # B == H, (B, T) positions
            case(1, 4, 7, 16, random_positions(gen, (7,), 10, MAX_POSITION, ordered=False), base=500.0),
            case(3, 1, 4, 6, random_positions(gen, (3, 4), 3, 40), zero=(1, 0, 2)),  # d/2 odd, B != H
        ]

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False):
        x = case.cast(dtype, device)  # copies: x in dtype, positions int64
        if grad:
            x["x"].requires_grad_(True)
        return target(x["x"], x["positions"], **case.config), None, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        x = case.cast(dtype)
        x["x"] = x["x"].double()  # rounded to dtype, computed in float64: the target a dtype run is held to
        if grad:
            x["x"].requires_grad_(True)
        fn = reference_module(self.file).apply_rope
        return fn(x["x"], x["positions"], case.dims["base"]), None, x

    def variant(self, case, knobs):
        x = case.inputs
        return (rope_fit.rotate(x["x"], x["positions"], case.dims["base"], knobs),)

    def expected_shapes(self, case):
        return {"out": tuple(case.inputs["x"].shape)}

    def expected_return(self) -> str:
        return t("evidence.cache.specs_rope.expected_return")


    def grad_inputs(self, x, module):
        return {"x": x["x"]}
