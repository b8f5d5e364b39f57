"""The shape every exercise spec has, and the pieces they share."""

from __future__ import annotations

import importlib.util
import inspect
from dataclasses import dataclass, field
from functools import lru_cache


import torch

from attn_drill import findings
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
        """Inputs in dtype on device; masks stay bool."""
        out = {}
        for name, t in self.inputs.items():
            if t is None or t.dtype == torch.bool:
                out[name] = None if t is None else t.to(device)
            else:
                out[name] = t.to(device=device, dtype=dtype, copy=True)  # a copy: user code may write in place
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
    """Base for an exercise spec. Outputs are always a tuple of tensors named by `outputs`."""

    id: str
    file: str
    outputs: tuple[str, ...]
    axes: dict[str, tuple[str, ...]]  # output name -> axis names, for locating a mismatch

    def resolve(self, module) -> tuple[object | None, Finding | None]:
        raise NotImplementedError

    def cases(self, gen: torch.Generator) -> list[Case]:
        raise NotImplementedError

    def call(self, target, case: Case, dtype=torch.float64, device="cpu", grad=False):
        """Run the user's code on the case; returns (raw result, module or None, inputs)."""
        raise NotImplementedError

    def reference(self, case: Case, dtype=torch.float64, device="cpu", grad=False):
        raise NotImplementedError

    def variant(self, case: Case, knobs: Knobs):
        raise NotImplementedError

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
        return "a tuple (out, weights) of two tensors"
