"""What the self-attention modules (mha-fused, gqa) share: forward(x, mask=None) -> (out, weights), layers
checked by name and shape, the reference's weights copied in, a mask with no head axis."""

from __future__ import annotations

import inspect

import torch
from torch import nn

from attn_drill import findings
from attn_drill.check.specs.base import Case, ModuleSpec, check_signature, prepare, reference_module
from attn_drill.check.specs.sdpa import random_mask


def random_params(gen, shapes: dict[str, tuple[int, int]], bias: bool) -> dict:
    """Weights with unit gain (x ~ N(0, 1) -> each feature ~ N(0, 1)), so scaled scores have spread ~1:
    softmax is neither flat nor saturated, and a wrong scale shows."""
    params = {}
    for name, (n_out, n_in) in shapes.items():
        params[f"{name}.weight"] = torch.randn(n_out, n_in, generator=gen, dtype=torch.float64) / n_in ** 0.5
        if bias:
            params[f"{name}.bias"] = 0.1 * torch.randn(n_out, generator=gen, dtype=torch.float64)
    return params


def random_case(gen, dims: dict, config: dict, shapes: dict, mask_kind: str | None, label: str) -> Case:
    """x (B, T, D) and a (B, T, T) or (B, 1, T) mask (or none), every row with a visible key."""
    B, T, D = dims["B"], dims["T"], dims["D"]
    x = torch.randn(B, T, D, generator=gen, dtype=torch.float64)
    mask = {None: None, "full": (B, T, T), "keys": (B, 1, T)}[mask_kind]
    mask = None if mask is None else random_mask(gen, *mask)
    label += (f", mask {tuple(mask.shape)}" if mask is not None else ", no mask")
    dims = dims | {"Tq": T, "Tk": T}
    return Case(label, {"x": x, "mask": mask}, dims, config=config,
                params=random_params(gen, shapes, config["bias"]))


class SelfAttentionSpec(ModuleSpec):
    outputs = ("out", "weights")
    axes = {"out": ("batch", "query", "feature"), "weights": ("batch", "head", "query", "key")}
    grad_names = ("x",)
    positional: tuple[str, ...]  # constructor arguments before bias, by config key
    signature: str  # the contract's __init__, as the user reads it

    def layer_shapes(self, config: dict) -> dict[str, tuple[int, int]]:
        """name -> (out_features, in_features) of each nn.Linear the contract names."""
        raise NotImplementedError

    def layer_text(self, name: str) -> str:
        raise NotImplementedError

    def resolve(self, module):
        cls = getattr(module, self.name, None)
        if cls is None:
            return None, findings.make("missing-name", f"no top-level `{self.name}` in your file",
                                       score=1.0, name=self.name)
        if not (inspect.isclass(cls) and issubclass(cls, nn.Module)):
            return None, findings.make("wrong-signature", f"`{self.name}` is not a subclass of nn.Module",
                                       score=1.0, name=self.name, expected=f"class {self.name}(nn.Module)")
        sample = {"d_model": 12, "num_heads": 4, "num_kv_heads": 2}
        bad = check_signature(cls, self.name, tuple(sample[k] for k in self.positional), {"bias": True},
                              self.signature)
        if bad:
            return None, bad
        bad = check_signature(cls.forward, f"{self.name}.forward", (None, 1), {"mask": None},
                              "forward(self, x, mask=None)")
        return (None, bad) if bad else (cls, None)

    def check_module(self, module: nn.Module, case: Case):
        """The contract's layers exist by name, with its shapes."""
        bias = case.config["bias"]
        for name, (n_out, n_in) in self.layer_shapes(case.config).items():
            sub = getattr(module, name, None)
            if not isinstance(sub, nn.Module) or not isinstance(getattr(sub, "weight", None), torch.Tensor):
                return findings.make("missing-name", f"`self.{name}` is not a layer with a weight (the checker copies "
                                     f"the reference's weights in by these names)", score=1.0, name=f"self.{name}",
                                     where=f"in __init__, as {self.layer_text(name)}")
            shape = tuple(sub.weight.shape)
            has_bias = getattr(sub, "bias", None) is not None
            if shape != (n_out, n_in) or has_bias != bias:
                return findings.make(
                    "wrong-signature",
                    f"self.{name} is weight {shape}, bias {has_bias} for {self.constructor(case)}; "
                    f"expected nn.Linear({n_in}, {n_out}, bias={bias})",
                    score=1.0, name=f"self.{name}", expected=self.layer_text(name))
        return None

    def build(self, cls, case: Case, dtype, device="cpu"):
        args = [case.config[k] for k in self.positional]
        module = cls(*args, bias=case.config["bias"])
        bad = self.check_module(module, case)
        if bad:
            return None, bad
        return prepare(module, case, self.layers, dtype, device), None

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False, module=None):
        if module is None:
            module, bad = self.build(target, case, dtype, device)
            if bad:
                raise RuntimeError(bad.evidence)
        x = case.cast(dtype, device)  # copies: the user's code may write into them
        if grad:
            x["x"].requires_grad_(True)
        kwargs = {"mask": x["mask"]} if x["mask"] is not None else {}
        return module(x["x"], **kwargs), module, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        cls = getattr(reference_module(self.file), self.name)
        # weights and inputs rounded to dtype, computed in float64: the target a dtype run is held to
        rounded = Case(case.label, case.inputs, case.dims, case.config,
                       {n: p.to(dtype).double() for n, p in case.params.items()})
        module, _ = self.build(cls, rounded, torch.float64)
        x = {n: (t.to(dtype).double() if t is not None and t.dtype != torch.bool else t)
             for n, t in case.inputs.items()}
        if grad:
            x["x"] = x["x"].detach().clone().requires_grad_(True)
        return module(x["x"], x["mask"]), module, x

    def empty_row_case(self, gen) -> Case:
        c = self.cases(gen)[0]
        mask = c.inputs["mask"].clone()
        mask[:, 1, :] = False
        c.inputs["mask"] = mask
        c.label += ", query 1 sees no key"
        return c

    def expected_shapes(self, case):
        B, H, T, D = (case.dims[n] for n in ("B", "H", "T", "D"))
        return {"out": (B, T, D), "weights": (B, H, T, T)}
