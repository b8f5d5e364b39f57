"""softmax: softmax(x, dim=-1) -> a tensor shaped like x, numerically stable, written by hand."""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.specs.base import Case, Spec, reference_module, resolve_function
from attn_drill.judge.trace import FORBIDDEN


def softmaxes() -> dict[str, str]:
    """Every ready-made softmax, by the name torch's function mode sees (softmax, _softmax, log_softmax,
    special_softmax, _safe_softmax, gumbel_softmax: F.*, Tensor.*, nn.Softmax through F.softmax,
    torch.ops.aten._softmax), and how the forbidden-builtin finding says it (in the language of the check)."""
    return {"softmax": t("evidence.attention.specs_softmax.ready_made")}


LARGE = 1e4  # the magnitude of the case that tells a stable softmax from a plain exp()


class PositionalAxes(tuple):
    """Axis names by position whatever the rank: compare.where() keeps the last len(index) names."""

    def __getitem__(self, key):
        if isinstance(key, slice) and key.start is not None and key.start < 0 and key.stop is None:
            return tuple(f"dim{i}" for i in range(-key.start))
        return super().__getitem__(key)


class SoftmaxSpec(Spec):
    # localise.py: the reference's variables, named as steps
    step_names = {"m": "max subtraction", "e": "exponentials", "return": "normalisation"}
    id = "softmax"
    file = "softmax.py"
    name = "softmax"
    outputs = ("out",)
    axes = {"out": PositionalAxes(("dim",) * 8)}

    @property
    def forbidden(self) -> dict:
        return FORBIDDEN | softmaxes()

    def resolve(self, module):
        calls = [((1,), {}), ((1,), {"dim": 0})]  # dim has a default, and is called by name
        return resolve_function(module, self.name, "softmax(x, dim=-1)", calls)

    def cases(self, gen):
        def randn(*shape, std=3.0):
            return std * torch.randn(*shape, generator=gen, dtype=torch.float64)

        def case(x, dim, note=""):
            said = t("evidence.attention.specs_softmax.default_dim") if dim is None else f"dim={dim}"
            return Case(t("evidence.attention.specs_softmax.label", shape=tuple(x.shape), dim=said, note=note),
                        {"x": x}, {"dim": dim, "shape": tuple(x.shape)})

        return [
            case(randn(3, 5, 7), -1),
            case(randn(4, 6), 0),  # the first axis of a 2-d tensor
            case(randn(2, 5, 4), 1),  # the middle axis of a 3-d tensor
            case(randn(2, 3, 4, 5), 2),  # a positive dim that is not the last
            case(randn(4, 9), None),  # the default must be the last axis
            case(large_rows(gen), 1, t("evidence.attention.specs_softmax.large")),
            case(with_neg_inf(gen, randn(2, 6, 5), dim=-2), -2, t("evidence.attention.specs_softmax.neg_inf")),
        ]

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False):
        x = case.cast(dtype, device)
        if grad:
            x["x"].requires_grad_(True)
        dim = case.dims["dim"]
        return (target(x["x"]) if dim is None else target(x["x"], dim=dim)), None, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        # inputs rounded to dtype, computed in float64: the target a dtype run is held to
        x = {"x": case.inputs["x"].to(dtype).double()}
        if grad:
            x["x"].requires_grad_(True)
        dim = case.dims["dim"]
        return reference_module(self.file).softmax(x["x"], dim=-1 if dim is None else dim), None, x

    def expected_shapes(self, case):
        return {"out": case.dims["shape"]}

    def grad_inputs(self, x, module):
        return {"x": x["x"]}


def large_rows(gen: torch.Generator) -> torch.Tensor:
    """Rows of 8 with a spread of a few units around very different levels, and one spread over ±LARGE.

    Row 0 holds the global max: a softmax with no max subtraction overflows there (exp(1e4) = inf) but
    nowhere a global max would hurt. Row 1 sits near 0: one global max underflows it to 0/0, while a
    plain exp() is fine there. The other rows break both (and a mean subtraction breaks row 4)."""
    levels = torch.tensor([1.0, 0.0, -1.0, 0.8, 0.0, 0.3], dtype=torch.float64) * LARGE
    x = levels[:, None] + 2.0 * torch.randn(6, 8, generator=gen, dtype=torch.float64)
    x[4] = 0.45 * LARGE * torch.randn(8, generator=gen, dtype=torch.float64).clamp(-2, 2)  # max stays below row 0
    # on a grid of 1/64, which float32 holds exactly below 2**14: a float32 detour stays as exact as float64
    return torch.round(x * 64) / 64


def with_neg_inf(gen: torch.Generator, x: torch.Tensor, dim: int) -> torch.Tensor:
    """About a quarter of the entries set to -inf, never a whole slice along dim (those may be NaN),
    and the first entry of some slices among them (an online softmax that starts from -inf breaks there)."""
    hide = torch.rand(x.shape, generator=gen) < 0.25
    first = hide.movedim(dim, -1)
    first[..., 0] = torch.rand(first.shape[:-1], generator=gen) < 0.5  # a view: writes into hide
    keep = torch.randint(1, x.size(dim), first.shape[:-1], generator=gen)  # one visible entry per slice
    first.scatter_(-1, keep[..., None], False)
    return x.masked_fill(hide, float("-inf"))
