"""mla: RMSNorm and MultiHeadLatentAttention(d_model, num_heads, kv_rank, d_nope, d_rope, d_v, rope_base),
forward(x, cache=None) -> (out, (c_kv_all, k_pe_all)).

A case is a sequence of calls, as in kv-cache: each call gets the cache the previous one returned (the user's own),
and one case starts from a cache the reference made, so a cache in another form shows. Every case also calls the
file's RMSNorm on its own, RMSNorm(kv_rank, eps=0.1) with a weight that is not ones, on inputs with an offset:
kv_norm's eps (1e-6) hides where eps goes, 0.1 does not, and the offset shows a mean subtracted.
The result of a case is `Run` (every call's raw result, and the lone norm's output); `unpack` gives
(out joined along time, c_kv, k_pe, norm).
"""

from __future__ import annotations

import weakref

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge.specs.base import Case, ModuleSpec, check_layer, check_signature, random_params
from attn_drill.judge.specs.kv_cache import join, well_formed  # the same (out, (a, b)) form
from attn_drill.judge.specs.llama_block import llama_forbidden
from attn_drill.judge.variants import mla as variants_mla
from attn_drill.judge.variants.mla import LONE_EPS, MLAKnobs

LINEARS = ("W_q", "W_kv_a", "W_kv_b", "W_o")
SHAPE_KEYS = ("d_model", "num_heads", "kv_rank", "d_nope", "d_rope", "d_v")


LONE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # module built for a case -> its lone RMSNorm


class Run(list):
    """Every call's raw result in a case, in order (each well formed: out, (c_kv, k_pe)), then `norm`."""

    norm = None


class MLASpec(ModuleSpec):
    id = "mla"
    file = "mla.py"
    name = "MultiHeadLatentAttention"
    outputs = ("out", "c_kv", "k_pe", "norm")
    axes = {"out": ("batch", "token", "feature"), "c_kv": ("batch", "position", "feature"),
            "k_pe": ("batch", "position", "feature"), "norm": ("batch", "token", "feature")}
    maps = "values"  # attn-drill show: W_kv_b's value rows chosen so each token's value is one-hot (judge/show.py)
    layers = LINEARS + ("kv_norm",)
    grad_names = ("x",)
    positional = SHAPE_KEYS
    keyword = "rope_base"
    signature = "__init__(self, d_model, num_heads, kv_rank, d_nope, d_rope, d_v, rope_base=10000.0)"
    forward = ((None, 1), {"cache": None}, "forward(self, x, cache=None)")
    float32_convention = True  # angles in float32 (as DeepSeek computes them): no precision-loss
    step_names = {"inv_freq": "frequencies", "theta": "angles", "cos, sin": "angles", "x1, x2": "pairs",
                  "rotated": "rotation", "xf": "norm", "normed": "norm", "positions": "positions",
                  "visible": "causal mask"}

    @property
    def forbidden(self) -> dict:
        return llama_forbidden()

    def resolve(self, module):
        cls, bad = super().resolve(module)
        if bad is None:
            norm = getattr(module, "RMSNorm", None)
            if not isinstance(norm, type):
                bad = findings.make("missing-name", t("evidence.modern.specs_mla.no_rmsnorm"), score=1.0,
                                    name="RMSNorm")
            else:
                bad = check_signature(norm, "RMSNorm", (8,), {"eps": 0.1}, "__init__(self, dim, eps=1e-6)")
        return (None, bad) if bad else (cls, None)

    def cases(self, gen):
        def case(B, H, r, dn, dr, dv, D, steps, base, what, past=0):
            config = {"d_model": D, "num_heads": H, "kv_rank": r, "d_nope": dn, "d_rope": dr, "d_v": dv,
                      "rope_base": base}
            T = sum(steps)
            dims = {"B": B, "H": H, "r": r, "d_nope": dn, "d_rope": dr, "d_v": dv, "D": D, "d": dn + dr, "T": T,
                    "T_past": past, "steps": steps, "Tq": T, "Tk": past + T}
            params = mla_params(gen, config)
            inputs = {"x": torch.randn(B, T, D, generator=gen, dtype=torch.float64),
                      "z": 0.5 + torch.randn(B, T, r, generator=gen, dtype=torch.float64)}  # for the lone RMSNorm
            if past:  # a cache the reference made: the user's module must continue from it
                x_past = torch.randn(B, past, D, generator=gen, dtype=torch.float64)
                _, inputs["c_past"], inputs["pe_past"] = variants_mla.run(params, x_past, config, (past,))
            label = t("evidence.modern.specs_mla.case", B=B, H=H, r=r, dn=dn, dr=dr, dv=dv, D=D, base=base,
                      what=t(f"evidence.modern.specs_mla.{what}"))
            return Case(label, inputs, dims, config=config, params=params)

        return [
            # the first case also runs for gradients, dtypes and devices: short, but with a cache
            case(2, 4, 12, 6, 4, 8, 16, (4, 1, 1), 10000.0, "prefill"),  # a prefill of 4 tokens, then 2 of 1
            case(2, 3, 10, 8, 6, 4, 24, (3, 5, 2), 100.0, "uneven"),  # 3 calls in uneven chunks
            case(3, 2, 14, 4, 8, 6, 12, (7,), 10000.0, "whole"),  # the whole sequence in one call
            case(2, 4, 9, 6, 4, 5, 20, (3, 1), 500.0, "given", past=5),  # from the reference's cache of 5 tokens
            case(2, 2, 11, 4, 6, 8, 16, (1, 1, 1, 2), 10000.0, "ones"),  # 3 calls of 1 token, then one of 2
        ]

    def layer_shapes(self, config):
        D, H, r, dn, dr, dv = (config[k] for k in SHAPE_KEYS)
        return {"W_q": (H * (dn + dr), D), "W_kv_a": (r + dr, D), "W_kv_b": (H * (dn + dv), r),
                "W_o": (D, H * dv)}

    def layer_text(self, name):
        return {"W_q": "nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)",
                "W_kv_a": "nn.Linear(d_model, kv_rank + d_rope, bias=False)",
                "W_kv_b": "nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)",
                "W_o": "nn.Linear(num_heads * d_v, d_model, bias=False)",
                "kv_norm": "RMSNorm(kv_rank, eps=1e-6)"}[name]

    def check_module(self, module, case):
        shapes = self.layer_shapes(case.config) | {"kv_norm": (case.config["kv_rank"],)}
        return next(filter(None, (check_layer(self, module, name, shape, None, case)
                                  for name, shape in shapes.items())), None)

    def build(self, cls, case, dtype, device="cpu"):
        module = cls(*(case.config[k] for k in SHAPE_KEYS), rope_base=case.config["rope_base"])
        bad = self.check_module(module, case)
        if bad:
            return None, bad
        module = module.to(device=device, dtype=dtype).eval()
        with torch.no_grad():
            for name in self.layers:
                module.get_submodule(name).weight.copy_(case.params[f"{name}.weight"])
        LONE[module] = self.lone_norm(module, case, dtype, device)  # built here, not inside the traced forward
        return module, None

    def lone_norm(self, module, case, dtype, device):
        """RMSNorm(kv_rank, eps=0.1) of the file the module's class came from, with the case's weight."""
        cls = getattr(type(module).forward, "__globals__", {}).get("RMSNorm") or type(module.kv_norm)
        norm = cls(case.config["kv_rank"], eps=LONE_EPS).to(device=device, dtype=dtype)
        with torch.no_grad():
            norm.weight.copy_(case.params["norm.weight"])
        return norm

    def feed(self, module, case, x, grad):
        """Feed the case's calls in turn; the first malformed result is returned as it is (and ends the case)."""
        if grad:
            x["x"].requires_grad_(True)
        norm = LONE[module](x["z"])  # first: a mistake in RMSNorm then departs in a short trace of its own
        cache = (x["c_past"], x["pe_past"]) if "c_past" in x else None
        results, start = Run(), 0
        for n in case.dims["steps"]:
            chunk = x["x"][:, start:start + n]
            r = module(chunk) if cache is None else module(chunk, cache=cache)
            if not well_formed(r):
                return r
            results.append(r)
            cache, start = r[1], start + n
        results.norm = norm
        return results

    def unpack(self, result):
        if not isinstance(result, Run) or not result or not isinstance(result.norm, torch.Tensor):
            return None
        c_kv, k_pe = result[-1][1]
        return join([r[0] for r in result]), c_kv, k_pe, result.norm

    def expected_return(self):
        return t("evidence.modern.specs_mla.expected_return")

    def expected_shapes(self, case):
        B, T, r, dr, D = (case.dims[n] for n in ("B", "T", "r", "d_rope", "D"))
        Tk = case.dims["Tk"]
        return {"out": (B, T, D), "c_kv": (B, Tk, r), "k_pe": (B, Tk, dr), "norm": (B, T, r)}

    def variant(self, case, knobs):
        kn = knobs if isinstance(knobs, MLAKnobs) else MLAKnobs(attn=knobs)
        x = case.inputs
        past = (x["c_past"], x["pe_past"]) if "c_past" in x else None
        out, c_kv, k_pe = variants_mla.run(case.params, x["x"], case.config, case.dims["steps"], past, kn)
        return out, c_kv, k_pe, variants_mla.lone_norm(case.params, x["z"], kn)

    def localised(self, case):
        """The case the localiser traces: its whole sequence in one call from no cache. Several calls trace the same
        steps again and again, and a step of one call would stand for another's; a mistake that shows only with a
        cache then has no departure (and no line from one), rather than a wrong one."""
        dims = case.dims | {"steps": (case.dims["T"],), "T_past": 0, "Tk": case.dims["T"]}
        inputs = {n: x for n, x in case.inputs.items() if n not in ("c_past", "pe_past")}
        return Case(case.label, inputs, dims, case.config, case.params)

    def localised_cached(self, case):
        """The case the localiser traces when the one from no cache shows nothing: a case that starts from the
        reference's cache keeps it, and its new tokens go in one call (positions counted from 0 show only there);
        None for a case that starts from no cache."""
        if not case.dims["T_past"]:
            return None
        return Case(case.label, dict(case.inputs), case.dims | {"steps": (case.dims["T"],)}, case.config, case.params)

    def hides(self, case):
        return True  # causal

    def visible(self, case):
        return None

    def grad_inputs(self, x, module):
        grads = {n: x[n] for n in self.grad_names}
        for name in self.layers:
            grads[f"{name}.weight"] = module.get_submodule(name).weight
        return grads

    def scale_names(self, case):
        dn, dr, dv, r, D = (case.dims[n] for n in ("d_nope", "d_rope", "d_v", "r", "D"))
        names = {t("evidence.modern.specs_mla.no_scale"): 1.0}
        for what, n in ((f"1/sqrt({dn}) = 1/sqrt(d_nope)", dn), (f"1/sqrt({dr}) = 1/sqrt(d_rope)", dr),
                        (f"1/sqrt({dv}) = 1/sqrt(d_v)", dv), (f"1/sqrt({r}) = 1/sqrt(kv_rank)", r),
                        (f"1/sqrt({D}) = 1/sqrt(d_model)", D), (f"1/{dn + dr} = 1/(d_nope + d_rope)", (dn + dr) ** 2)):
            names[what] = n ** -0.5
        return names

    def merged(self, case):
        raise NotImplementedError


def mla_params(gen, config: dict) -> dict:
    """float64 weights by dotted name: unit-gain projections; kv_norm's weight and the lone norm's around 1, not 1."""
    params = random_params(gen, MLASpec().layer_shapes(config), False)
    r = config["kv_rank"]
    for name in ("kv_norm", "norm"):
        params[f"{name}.weight"] = 1.0 + 0.5 * torch.randn(r, generator=gen, dtype=torch.float64)
    return params
