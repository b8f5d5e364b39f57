"""mha: class MultiHeadAttention(d_model, num_heads, bias=True), forward(query, key, value, mask=None)."""

from __future__ import annotations

import inspect

import torch
from torch import nn

from attn_drill import findings
from attn_drill.check import variants
from attn_drill.check.specs.base import Case, ModuleSpec, check_signature, prepare, reference_module
from attn_drill.check.specs.sdpa import random_mask

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


def random_params(gen, D: int, bias: bool) -> dict:
    """Weights with unit gain (x ~ N(0, 1) -> q ~ N(0, 1)), so scaled scores have spread ~1: softmax is
    neither flat nor saturated, and a wrong scale shows."""
    params = {}
    for name in PROJECTIONS:
        params[f"{name}.weight"] = torch.randn(D, D, generator=gen, dtype=torch.float64) / D ** 0.5
        if bias:
            params[f"{name}.bias"] = 0.1 * torch.randn(D, generator=gen, dtype=torch.float64)
    return params


class MHASpec(ModuleSpec):
    id = "mha"
    file = "mha.py"
    name = "MultiHeadAttention"
    layers = PROJECTIONS
    grad_names = ("query", "key", "value")
    outputs = ("out", "weights")
    axes = {"out": ("batch", "query", "feature"), "weights": ("batch", "head", "query", "key")}

    def resolve(self, module):
        cls = getattr(module, self.name, None)
        if cls is None:
            return None, findings.make("missing-name", f"no top-level `{self.name}` in your file",
                                       score=1.0, name=self.name)
        if not (inspect.isclass(cls) and issubclass(cls, nn.Module)):
            return None, findings.make("wrong-signature", f"`{self.name}` is not a subclass of nn.Module",
                                       score=1.0, name=self.name, expected="class MultiHeadAttention(nn.Module)")
        expected = "__init__(self, d_model, num_heads, bias=True)"
        bad = check_signature(cls, self.name, (12, 3), {"bias": True}, expected)
        if bad:
            return None, bad
        bad = check_signature(cls.forward, f"{self.name}.forward", (None, 1, 2, 3), {"mask": None},
                              "forward(self, query, key, value, mask=None)")
        return (None, bad) if bad else (cls, None)

    def check_module(self, module: nn.Module, case: Case) -> findings.Finding | None:
        """The four projections exist by name, with the contract's shapes."""
        D, bias = case.config["d_model"], case.config["bias"]
        for name in PROJECTIONS:
            sub = getattr(module, name, None)
            if not isinstance(sub, nn.Module) or not isinstance(getattr(sub, "weight", None), torch.Tensor):
                return findings.make("missing-name", f"`self.{name}` is not a layer with a weight (the checker copies "
                                     f"the reference's weights in by these names)", score=1.0, name=f"self.{name}",
                                     where="in __init__, as nn.Linear(d_model, d_model, bias=bias)")
            shape = tuple(sub.weight.shape)
            has_bias = getattr(sub, "bias", None) is not None
            if shape != (D, D) or has_bias != bias:
                return findings.make(
                    "wrong-signature",
                    f"self.{name} is weight {shape}, bias {has_bias} for d_model={D}, bias={bias}; "
                    f"expected nn.Linear({D}, {D}, bias={bias})",
                    score=1.0, name=f"self.{name}", expected="nn.Linear(d_model, d_model, bias=bias)")
        return None

    def cases(self, gen):
        def case(B, H, Tq, Tk, d, mask_kind, bias=True, self_attn=False):
            D = H * d
            query = torch.randn(B, Tq, D, generator=gen, dtype=torch.float64)
            key = query if self_attn else torch.randn(B, Tk, D, generator=gen, dtype=torch.float64)
            value = query if self_attn else torch.randn(B, Tk, D, generator=gen, dtype=torch.float64)
            mask = {None: None, "full": lambda: random_mask(gen, B, Tq, Tk),
                    "keys": lambda: random_mask(gen, B, 1, Tk)}[mask_kind]
            mask = mask() if mask else None
            label = (f"B={B} H={H} Tq={Tq} Tk={Tk} d={d} (D={D}{'' if bias else ', bias=False'}), "
                     + (f"mask {tuple(mask.shape)}" if mask is not None else "no mask")
                     + (", self-attention" if self_attn else ""))
            return Case(label, {"query": query, "key": key, "value": value, "mask": mask},
                        {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "D": D},
                        config={"d_model": D, "num_heads": H, "bias": bias},
                        params=random_params(gen, D, bias))

        return [
            case(2, 3, 5, 6, 7, "full"),  # every size distinct
            case(2, 3, 5, 6, 7, "keys"),  # a (B, 1, Tk) padding-style mask
            case(2, 3, 5, 5, 7, None, self_attn=True),
            case(3, 3, 4, 4, 4, "full"),  # B == H: a mask without a head axis broadcasts silently here
            case(2, 2, 3, 7, 8, None, bias=False),
        ]

    def empty_row_case(self, gen) -> Case:
        c = self.cases(gen)[0]
        mask = c.inputs["mask"].clone()
        mask[:, 1, :] = False
        c.inputs["mask"] = mask
        c.label += ", query 1 sees no key"
        return c

    def build(self, cls, case: Case, dtype, device="cpu"):
        module = cls(case.config["d_model"], case.config["num_heads"], bias=case.config["bias"])
        bad = self.check_module(module, case)
        if bad:
            return None, bad
        return prepare(module, case, PROJECTIONS, dtype, device), None

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False, module=None):
        if module is None:
            module, bad = self.build(target, case, dtype, device)
            if bad:
                raise RuntimeError(bad.evidence)
        x = case.cast(dtype, device)
        if case.inputs["key"] is case.inputs["query"]:
            x["key"] = x["value"] = x["query"]
        if grad:
            for n in ("query", "key", "value"):
                x[n] = x[n].detach().clone().requires_grad_(True)
        kwargs = {"mask": x["mask"]} if x["mask"] is not None else {}
        return module(x["query"], x["key"], x["value"], **kwargs), module, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        cls = reference_module(self.file).MultiHeadAttention
        # weights and inputs rounded to dtype, computed in float64: the target a dtype run is held to
        rounded = Case(case.label, case.inputs, case.dims, case.config,
                       {n: p.to(dtype).double() for n, p in case.params.items()})
        module, _ = self.build(cls, rounded, torch.float64)
        x = {n: (t.to(dtype).double() if t is not None and t.dtype != torch.bool else t) for n, t in case.inputs.items()}
        if grad:
            for n in ("query", "key", "value"):
                x[n] = x[n].detach().clone().requires_grad_(True)
        return module(x["query"], x["key"], x["value"], x["mask"]), module, x

    def variant(self, case, knobs):
        x = case.inputs
        return variants.mha(case.params, case.dims["H"], x["query"], x["key"], x["value"], x["mask"], knobs)

    def expected_shapes(self, case):
        B, H, Tq, Tk, D = (case.dims[n] for n in ("B", "H", "Tq", "Tk", "D"))
        return {"out": (B, Tq, D), "weights": (B, H, Tq, Tk)}

    def raw_scores(self, case):
        q, k = variants.mha_qk(case.params, case.dims["H"], case.inputs["query"], case.inputs["key"])
        return q @ k.transpose(-2, -1)  # (B, H, Tq, Tk)

    def projected(self, case):
        x, p = case.inputs, case.params
        return {n: variants.linear(x[i], p, n) for n, i in (("W_q", "query"), ("W_k", "key"), ("W_v", "value"))}
