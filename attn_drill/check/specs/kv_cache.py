"""kv-cache: class CachedSelfAttention(d_model, num_heads, num_kv_heads, rope_base=10000.0),
forward(x, cache=None) -> (out, (k_all, v_all)).

A case is a sequence of calls: each gets the cache the previous call returned (the user's own, as in real
decoding), and every call's out is compared, together with the cache the last call returns. The result
of a case is `Steps`, every call's raw result; `unpack` joins the outs along time: (out, k_cache, v_cache).
"""

from __future__ import annotations

import inspect

import torch
from torch import nn

from attn_drill import findings
from attn_drill.check import variants_cache
from attn_drill.check.specs.base import Case, Spec, check_signature, prepare, reference_module

LAYERS = ("W_q", "W_k", "W_v", "W_o")
SIGNATURE = "__init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0)"


class Steps(list):
    """Every call's raw result in a case, in order (each well formed: out, (k, v))."""


def well_formed(r) -> bool:
    return (isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], torch.Tensor)
            and isinstance(r[1], (tuple, list)) and len(r[1]) == 2
            and all(isinstance(t, torch.Tensor) for t in r[1]))


def join(outs: list) -> torch.Tensor:
    """Every call's out, joined along time. An out that cannot join the first is returned alone: its shape
    (or device) then differs from the whole case's, which is what the stages report."""
    first = outs[0]
    for o in outs[1:]:
        if o.dim() != 3 or first.dim() != 3 or o.shape[::2] != first.shape[::2] or o.device != first.device:
            return o
    return torch.cat(outs, dim=1)


def random_params(gen, D: int, Dkv: int) -> dict:
    """Unit-gain weights (x ~ N(0, 1) -> every feature ~ N(0, 1)): scaled scores spread ~1, so a wrong scale shows."""
    shapes = {"W_q": (D, D), "W_k": (Dkv, D), "W_v": (Dkv, D), "W_o": (D, D)}
    return {f"{n}.weight": torch.randn(*s, generator=gen, dtype=torch.float64) / D ** 0.5 for n, s in shapes.items()}


class KVCacheSpec(Spec):
    id = "kv-cache"
    file = "kv_cache.py"
    name = "CachedSelfAttention"
    outputs = ("out", "k_cache", "v_cache")
    axes = {"out": ("batch", "token", "feature"), "k_cache": ("batch", "kv head", "position", "feature"),
            "v_cache": ("batch", "kv head", "position", "feature")}

    def resolve(self, module):
        cls = getattr(module, self.name, None)
        if cls is None:
            return None, findings.make("missing-name", f"no top-level `{self.name}` in your file",
                                       score=1.0, name=self.name)
        if not (inspect.isclass(cls) and issubclass(cls, nn.Module)):
            return None, findings.make("wrong-signature", f"`{self.name}` is not a subclass of nn.Module",
                                       score=1.0, name=self.name, expected=f"class {self.name}(nn.Module)")
        bad = check_signature(cls, self.name, (16, 4, 2), {"rope_base": 10000.0}, SIGNATURE)
        if bad:
            return None, bad
        bad = check_signature(cls.forward, f"{self.name}.forward", (None, 1), {"cache": None},
                              "forward(self, x, cache=None)")
        return (None, bad) if bad else (cls, None)

    def layer_shapes(self, config: dict) -> dict:
        D, H, Hkv = config["d_model"], config["num_heads"], config["num_kv_heads"]
        Dkv = Hkv * (D // H)
        return {"W_q": (D, D), "W_k": (Dkv, D), "W_v": (Dkv, D), "W_o": (D, D)}

    def check_module(self, module: nn.Module, case: Case):
        """The four layers exist by name, with the contract's shapes and no bias."""
        texts = {"W_q": "nn.Linear(d_model, d_model, bias=False)", "W_o": "nn.Linear(d_model, d_model, bias=False)",
                 "W_k": "nn.Linear(d_model, num_kv_heads * d, bias=False)",
                 "W_v": "nn.Linear(d_model, num_kv_heads * d, bias=False)"}
        for name, (n_out, n_in) in self.layer_shapes(case.config).items():
            sub = getattr(module, name, None)
            if not isinstance(sub, nn.Module) or not isinstance(getattr(sub, "weight", None), torch.Tensor):
                return findings.make("missing-name", f"`self.{name}` is not a layer with a weight (the checker copies "
                                     "the reference's weights in by these names)", score=1.0, name=f"self.{name}",
                                     where=f"in __init__, as {texts[name]}")
            shape, has_bias = tuple(sub.weight.shape), getattr(sub, "bias", None) is not None
            if shape != (n_out, n_in) or has_bias:
                return findings.make(
                    "wrong-signature", f"self.{name} is weight {shape}, bias {has_bias} for {self.constructor(case)}; "
                    f"expected nn.Linear({n_in}, {n_out}, bias=False)", score=1.0, name=f"self.{name}",
                    expected=texts[name])
        return None

    def build(self, cls, case: Case, dtype, device="cpu"):
        c = case.config
        module = cls(c["d_model"], c["num_heads"], c["num_kv_heads"], rope_base=c["rope_base"])
        bad = self.check_module(module, case)
        if bad:
            return None, bad
        return prepare(module, case, LAYERS, dtype, device), None

    def cases(self, gen):
        def case(B, H, Hkv, d, steps, base, what, past=0):
            D = H * d
            dims = {"B": B, "H": H, "Hkv": Hkv, "d": d, "D": D, "T": sum(steps), "T_past": past, "steps": steps}
            params = random_params(gen, D, Hkv * d)
            inputs = {"x": torch.randn(B, sum(steps), D, generator=gen, dtype=torch.float64)}
            if past:  # a cache made by the reference: the user's module must continue from it
                x_past = torch.randn(B, past, D, generator=gen, dtype=torch.float64)
                _, inputs["k_past"], inputs["v_past"] = variants_cache.run(params, dims, base, x_past, (past,))
            label = f"B={B} H={H} Hkv={Hkv} d={d} (D={D}, rope_base={base:g}): {what}"
            config = {"d_model": D, "num_heads": H, "num_kv_heads": Hkv, "rope_base": base}
            return Case(label, inputs, dims, config=config, params=params)

        return [
            # the first case also runs for gradients, dtypes and devices: short, but with a cache
            case(2, 4, 2, 8, (4, 1, 1), 10000.0, "a prefill of 4 tokens, then 2 calls of 1 token"),
            case(2, 6, 2, 6, (3, 5, 2), 100.0, "3 calls in uneven chunks of 3, 5, 2 tokens"),
            case(3, 4, 2, 8, (7,), 10000.0, "the whole sequence of 7 tokens in one call"),
            case(2, 8, 2, 4, (3, 1), 500.0, "a cache of 4 tokens given, then calls of 3 and 1 tokens", past=4),
            case(2, 3, 1, 8, (1, 1, 1, 2), 10000.0, "3 calls of 1 token from an empty cache, then one of 2"),
        ]

    def steps(self, module, case: Case, x: dict) -> Steps | object:
        """Feed the case's calls in turn; the first malformed result is returned as it is (and ends the case)."""
        cache = (x["k_past"], x["v_past"]) if "k_past" in x else None
        results, start = Steps(), 0
        for n in case.dims["steps"]:
            chunk = x["x"][:, start:start + n]
            r = module(chunk) if cache is None else module(chunk, cache=cache)
            if not well_formed(r):
                return r
            results.append(r)
            cache, start = r[1], start + n
        return results

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False, module=None):
        if module is None:
            module, bad = self.build(target, case, dtype, device)
            if bad:
                raise RuntimeError(bad.evidence)
        x = case.cast(dtype, device)  # copies: the user's code may write into them
        if grad:
            x["x"].requires_grad_(True)
        return self.steps(module, case, x), module, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        cls = reference_module(self.file).CachedSelfAttention
        # weights and inputs rounded to dtype, computed in float64: the target a dtype run is held to
        rounded = Case(case.label, case.inputs, case.dims, case.config,
                       {n: p.to(dtype).double() for n, p in case.params.items()})
        module, _ = self.build(cls, rounded, torch.float64)
        x = {n: t.to(dtype).double() for n, t in case.inputs.items()}
        if grad:
            x["x"].requires_grad_(True)
        return self.steps(module, case, x), module, x

    def unpack(self, result):
        if not isinstance(result, Steps) or not result:
            return None
        k, v = result[-1][1]
        return join([r[0] for r in result]), k, v

    def expected_return(self) -> str:
        return "a pair (out, (k_all, v_all)): out a tensor, then the cache as a pair of tensors"

    def expected_shapes(self, case):
        B, Hkv, d, D, T, past = (case.dims[n] for n in ("B", "Hkv", "d", "D", "T", "T_past"))
        cache = (B, Hkv, past + T, d)
        return {"out": (B, T, D), "k_cache": cache, "v_cache": cache}

    def variant(self, case, knobs):
        x = case.inputs
        past = (x["k_past"], x["v_past"]) if "k_past" in x else None
        return variants_cache.run(case.params, case.dims, case.config["rope_base"], x["x"], case.dims["steps"],
                                  past, knobs)

    def locate(self, check) -> str:
        from attn_drill.check.diagnoses.cache import locate
        return locate(check)

    def grad_inputs(self, x, module):
        return {"x": x["x"]} | {f"{n}.weight": getattr(module, n).weight for n in LAYERS}
