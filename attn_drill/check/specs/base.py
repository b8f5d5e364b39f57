"""The shape every exercise spec has, and the pieces they share."""

from __future__ import annotations

import importlib.util
import inspect
from dataclasses import dataclass, field
from functools import lru_cache


import torch

from attn_drill import findings
from attn_drill.check.compare import closeness
from attn_drill.check.trace import FORBIDDEN
from attn_drill.check.variants import Knobs
from attn_drill.report import Finding


@dataclass
class Case:
    label: str  # how the report names it, e.g. "B=2 H=3 Tq=5 Tk=6 d=7, mask (B, Tq, Tk)"
    inputs: dict  # name -> float64 CPU tensor, or None
    dims: dict  # d, dv, D, H, B ... as the case uses them
    config: dict = field(default_factory=dict)  # constructor arguments, for modules
    params: dict | None = None  # float64 weights the user's module receives, by submodule name

    @property
    def masked(self) -> bool:
        return self.inputs.get("mask") is not None

    def cast(self, dtype: torch.dtype, device: str = "cpu") -> dict:
        """Copies of the inputs on device, floating ones in dtype (masks stay bool, positions int64).
        Always copies: user code may write into its inputs, and the case must stay as it was."""
        out = {}
        for name, t in self.inputs.items():
            if t is None:
                out[name] = None
            else:
                out[name] = t.to(device=device, dtype=dtype if t.is_floating_point() else t.dtype, copy=True)
        return out


@lru_cache(maxsize=None)
def reference_module(exercise_file: str):
    """Import reference/<file> (the model answer) once."""
    from attn_drill import paths

    path = paths.REFERENCE / exercise_file
    spec = importlib.util.spec_from_file_location(f"attn_drill_reference_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(module, case: Case, layers: tuple[str, ...], dtype, device):
    """The user's freshly built module in eval mode, on device in dtype, with the case's weights copied in by
    layer name: the reference's weights, so outputs compare (never two independent initialisations)."""
    module = module.to(device=device, dtype=dtype).eval()
    with torch.no_grad():
        for name in layers:
            sub = getattr(module, name)
            sub.weight.copy_(case.params[f"{name}.weight"])
            if f"{name}.bias" in case.params:
                sub.bias.copy_(case.params[f"{name}.bias"])
    return module


def check_signature(obj, name: str, args: tuple, kwargs: dict, expected: str) -> Finding | None:
    """Can `obj` be called as the contract says? (bind only: nothing runs)"""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None  # a builtin or C callable: let the call decide
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        return findings.make("wrong-signature", f"{name}{sig}: {e}", score=1.0, name=name, expected=expected)
    return None


class Spec:
    """Base for an exercise spec.

    The user's result is flattened by `unpack` into a tuple of tensors named by `outputs` (a bare tensor for a
    one-output exercise, (out, weights) for attention, (out, k, v) for a cache...); the reference's result too.
    """

    id: str
    file: str
    name: str  # the name the file must define (the first one, when there are several)
    outputs: tuple[str, ...]
    axes: dict[str, tuple[str, ...]]  # output name -> axis names, for locating a mismatch
    forbidden: dict = FORBIDDEN  # substrings of torch function names that do the exercise -> how to say them
    differentiable = True  # the gradients stage applies (not to boolean masks)
    float_inputs = True  # the dtypes stage applies: the inputs come in any float dtype

    def resolve(self, module) -> tuple[object | None, Finding | None]:
        raise NotImplementedError

    def unpack(self, result) -> tuple | None:
        """The result as a flat tuple of tensors, one per `outputs`; None when it has another form."""
        n = len(self.outputs)
        if n == 1 and isinstance(result, torch.Tensor):
            return (result,)
        if n > 1 and isinstance(result, tuple) and len(result) == n and all(
                isinstance(t, torch.Tensor) for t in result):
            return tuple(result)
        return None

    def constructor(self, case: Case) -> str:
        """How the checker builds the module for a case, as the user would write it."""
        args = ", ".join(f"{k}={v!r}" for k, v in case.config.items())
        return f"{self.name}({args})"

    def cases(self, gen: torch.Generator) -> list[Case]:
        raise NotImplementedError

    def call(self, target, case: Case, dtype=torch.float64, device="cpu", grad=False):
        """Run the user's code on the case; returns (raw result, module or None, inputs)."""
        raise NotImplementedError

    def reference(self, case: Case, dtype=torch.float64, device="cpu", grad=False):
        raise NotImplementedError

    def variant(self, case: Case, knobs: Knobs):
        raise NotImplementedError

    def distance(self, a: tuple, b: tuple, var: tuple) -> float:
        """How far outputs a are from outputs b (either may be a variant's `var`): the worst relative L2
        distance over the outputs. Diagnoses hold a variant to reproduce the user's outputs under MATCH."""
        return max(closeness(x, y) for x, y in zip(a, b))

    def raw_scores(self, case: Case) -> torch.Tensor:
        """q k^T before any scale, shaped like the weights: to fit the user's effective scale."""
        raise NotImplementedError

    def visible(self, case: Case) -> torch.Tensor | None:
        """bool, broadcastable to the weights: which (query, key) entries the correct answer can see."""
        raise NotImplementedError

    def scale_names(self, case: Case) -> dict[str, float]:
        """Scales users really write by mistake, by how to say them."""
        d = case.dims["d"]
        return {"1 (no scale)": 1.0, f"1/{d} = 1/d": 1.0 / d, f"sqrt({d}) = sqrt(d), multiplied": d ** 0.5}

    def expected_return(self) -> str:
        return "a tuple (out, weights) of two tensors" if len(self.outputs) == 2 else "a tensor"

    def expected_shapes(self, case: Case) -> dict[str, tuple]:
        raise NotImplementedError

    def grad_inputs(self, x: dict, module) -> dict[str, torch.Tensor]:
        """The leaves whose gradients are compared with the reference's: inputs, then parameters."""
        raise NotImplementedError


class ModuleSpec(Spec):
    """What the attention modules share (mha, mha-fused, gqa): a mask with no head axis, scales that confuse
    d with d_model, gradients for the inputs and every layer, and what each layer should see (for the hooks
    of module_hooks: `projected`, `merged`)."""

    layers: tuple[str, ...]  # the nn.Linear layers the contract names
    grad_names: tuple[str, ...]  # the inputs whose gradients are compared

    def visible(self, case):
        m = case.inputs["mask"]
        return None if m is None else m.unsqueeze(1)  # (B, 1, Tq or 1, Tk): broadcast over heads

    def scale_names(self, case):
        names = super().scale_names(case)
        D = case.dims["D"]
        names[f"1/sqrt({D}) = 1/sqrt(d_model)"] = D ** -0.5
        names[f"1/{D} = 1/d_model"] = 1.0 / D
        return names

    def projected(self, case: Case) -> dict[str, torch.Tensor]:
        """What each input projection should output on the case, by layer name (for locate)."""
        raise NotImplementedError

    def merged(self, case: Case) -> torch.Tensor:
        """What W_o should receive: the heads' outputs merged back, (B, Tq, D)."""
        return self.variant(case, Knobs(out_proj=False))[0]

    def locate(self, check) -> str:
        """Where the user's module first departs from the reference (hooks on its layers)."""
        from attn_drill.check.module_hooks import locate
        return locate(check)

    def grad_inputs(self, x, module):
        grads = {n: x[n] for n in self.grad_names}
        for name in self.layers:
            sub = getattr(module, name)
            grads[f"{name}.weight"] = sub.weight
            if sub.bias is not None:
                grads[f"{name}.bias"] = sub.bias
        return grads
