"""kv-cache: class CachedSelfAttention(d_model, num_heads, num_kv_heads, rope_base=10000.0),
forward(x, cache=None) -> (out, (k_all, v_all)).

A case is a sequence of calls: each gets the cache the previous call returned (the user's own, as in real
decoding), and every call's out is compared, together with the cache the last call returns. The result
of a case is `Steps`, every call's raw result; `unpack` joins the outs along time: (out, k_cache, v_cache).
"""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.variants import cache as variants_cache
from attn_drill.judge.specs.base import Case, ModuleSpec, grouped_layer_shapes, random_params


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


class KVCacheSpec(ModuleSpec):
    # localise.py: the reference's variables, named as steps
    float32_convention = True  # angles in float32 are right (as Hugging Face computes them): no precision-loss
    step_names = {"inv_freq": "frequencies", "angles": "angles", "cos, sin": "angles", "x1, x2": "pairs",
                  "return": "rotation", "positions": "positions", "k": "cache", "v": "cache",
                  "visible": "causal mask"}
    id = "kv-cache"
    file = "kv_cache.py"
    name = "CachedSelfAttention"
    outputs = ("out", "k_cache", "v_cache")
    axes = {"out": ("batch", "token", "feature"), "k_cache": ("batch", "kv head", "position", "feature"),
            "v_cache": ("batch", "kv head", "position", "feature")}
    layers = ("W_q", "W_k", "W_v", "W_o")
    grad_names = ("x",)
    positional = ("d_model", "num_heads", "num_kv_heads")
    keyword = "rope_base"
    maps = "values"  # attn-drill show
    signature = "__init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0)"
    forward = ((None, 1), {"cache": None}, "forward(self, x, cache=None)")

    def layer_shapes(self, config):
        return grouped_layer_shapes(config)

    def layer_text(self, name):
        width = "num_kv_heads * d" if name in ("W_k", "W_v") else "d_model"
        return f"nn.Linear(d_model, {width}, bias=False)"

    def cases(self, gen):
        def case(B, H, Hkv, d, steps, base, what, past=0):
            D = H * d
            dims = {"B": B, "H": H, "Hkv": Hkv, "d": d, "D": D, "T": sum(steps), "T_past": past, "steps": steps}
            config = {"d_model": D, "num_heads": H, "num_kv_heads": Hkv, "rope_base": base}
            params = random_params(gen, grouped_layer_shapes(config), bias=False)
            inputs = {"x": torch.randn(B, sum(steps), D, generator=gen, dtype=torch.float64)}
            if past:  # a cache made by the reference: the user's module must continue from it
                x_past = torch.randn(B, past, D, generator=gen, dtype=torch.float64)
                _, inputs["k_past"], inputs["v_past"] = variants_cache.run(params, dims, base, x_past, (past,))
            label = t("evidence.cache.specs_kv_cache.label", B=B, H=H, Hkv=Hkv, d=d, D=D, base=base, what=what)
            return Case(label, inputs, dims, config=config, params=params)

        return [
            # the first case also runs for gradients, dtypes and devices: short, but with a cache
            case(2, 4, 2, 8, (4, 1, 1), 10000.0, t("evidence.cache.specs_kv_cache.prefill")),
            case(2, 6, 2, 6, (3, 5, 2), 100.0, t("evidence.cache.specs_kv_cache.uneven")),
            case(3, 4, 2, 8, (7,), 10000.0, t("evidence.cache.specs_kv_cache.one_call")),
            case(2, 8, 2, 4, (3, 1), 500.0, t("evidence.cache.specs_kv_cache.given_cache"), past=4),
            case(2, 3, 1, 8, (1, 1, 1, 2), 10000.0, t("evidence.cache.specs_kv_cache.empty_cache")),
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

    def feed(self, module, case, x, grad):
        if grad:
            x["x"].requires_grad_(True)
        return self.steps(module, case, x)

    def unpack(self, result):
        if not isinstance(result, Steps) or not result:
            return None
        k, v = result[-1][1]
        return join([r[0] for r in result]), k, v

    def expected_return(self) -> str:
        return t("evidence.cache.specs_kv_cache.expected_return")

    def expected_shapes(self, case):
        B, Hkv, d, D, T, past = (case.dims[n] for n in ("B", "Hkv", "d", "D", "T", "T_past"))
        cache = (B, Hkv, past + T, d)
        return {"out": (B, T, D), "k_cache": cache, "v_cache": cache}

    def variant(self, case, knobs):
        x = case.inputs
        past = (x["k_past"], x["v_past"]) if "k_past" in x else None
        return variants_cache.run(case.params, case.dims, case.config["rope_base"], x["x"], case.dims["steps"],
                                  past, knobs)

