"""llama-block: RMSNorm, SwiGLU and LlamaBlock(d_model, num_heads, num_kv_heads, d_ff, rope_base, eps).

The checker copies the reference's weights in by dotted name (W_q ... W_o, ffn.w1/w2/w3, attn_norm, ffn_norm),
the norms' weights random (not their ones), so a norm in the wrong place shows. The input is a residual stream
of another scale than any sub-layer's output (std 3, offset), so a dropped residual cannot hide. The cases vary
what a careless block gets wrong: eps large (0.1) and small, positions absent, uneven (T,), and (B, T) with rows
that differ, 1 < num_kv_heads < num_heads, one kv head, and as many as the query heads.
"""

from __future__ import annotations

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge.compare import closeness
from attn_drill.judge.specs.base import Case, ModuleSpec, check_layer, check_signature, random_params
from attn_drill.judge.specs.layers import LAYER_FORBIDDEN, residual_stream
from attn_drill.judge.variants.llama import LlamaKnobs, block

LINEARS = ("W_q", "W_k", "W_v", "W_o", "ffn.w1", "ffn.w2", "ffn.w3")
NORMS = ("attn_norm", "ffn_norm")


def llama_forbidden() -> dict:
    """The layers' forbidden built-ins and a built-in RMS norm, worded in the language in use."""
    return LAYER_FORBIDDEN | {"rms_norm": t("evidence.modern.specs_llama_block.rms_norm_builtin")}


class LlamaBlockSpec(ModuleSpec):
    id = "llama-block"
    file = "llama_block.py"
    name = "LlamaBlock"
    outputs = ("out",)
    axes = {"out": ("batch", "query", "feature")}
    maps = "values"  # attn-drill show: W_v's output one-hot, W_o's input read (judge/show.py)
    layers = LINEARS + NORMS
    grad_names = ("x",)
    positional = ("d_model", "num_heads", "num_kv_heads", "d_ff")  # for the signature check (base.SAMPLE)
    keyword = "rope_base"
    signature = "__init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6)"
    forward = ((None, 1), {"positions": None}, "forward(self, x, positions=None)")
    step_names = {"inv_freq": "frequencies", "theta": "angles", "cos, sin": "angles", "x1, x2": "pairs",
                  "rotated": "rotation", "xf": "norm", "normed": "norm"}

    @property
    def forbidden(self) -> dict:
        return llama_forbidden()

    def resolve(self, module):
        cls, bad = super().resolve(module)
        if bad is None:  # eps by its name, forward without positions, and the two helpers the checker may call
            bad = check_signature(cls, self.name, (16, 4, 2, 24), {"rope_base": 500.0, "eps": 0.1}, self.signature) \
                or check_signature(cls.forward, f"{self.name}.forward", (None, 1), {}, self.forward[2]) \
                or next((findings.make("missing-name", t("evidence.modern.specs_llama_block.no_class", name=name),
                                       score=1.0, name=name)
                         for name in ("RMSNorm", "SwiGLU") if not isinstance(getattr(module, name, None), type)), None)
        return (None, bad) if bad else (cls, None)

    def cases(self, gen):
        def case(B, H, Hkv, T, d, d_ff, eps, positions, base=10000.0):
            D = H * d
            config = {"d_model": D, "num_heads": H, "num_kv_heads": Hkv, "d_ff": d_ff, "rope_base": base, "eps": eps}
            if positions == "uneven":  # gaps of 1 to 4, not starting at 0
                pos = 2 + torch.randint(1, 5, (T,), generator=gen).cumsum(0)
            elif positions == "rows":  # (B, T): each sequence its own uneven positions
                pos = torch.randint(1, 5, (B, T), generator=gen).cumsum(-1) - 1
            else:
                pos = None
            if positions == "uneven":
                said = t("evidence.modern.specs_llama_block.positions", positions=pos.tolist())
            elif positions == "rows":
                said = t("evidence.modern.specs_llama_block.positions_rows", first=pos[0].tolist(),
                         second=pos[1].tolist())
            else:
                said = t("evidence.modern.specs_llama_block.positions_none")
            dims = {"B": B, "H": H, "Hkv": Hkv, "T": T, "d": d, "D": D, "d_ff": d_ff}
            label = t("evidence.modern.specs_llama_block.case", B=B, H=H, Hkv=Hkv, T=T, d=d, D=D, d_ff=d_ff, eps=eps,
                      base=base, said=said)
            return Case(label, {"x": residual_stream(gen, B, T, D), "positions": pos}, dims | {"Tq": T, "Tk": T},
                        config=config, params=block_params(gen, config))

        return [
            case(3, 4, 1, 7, 6, 20, 1e-6, None),  # one kv head (multi-query); positions made by the block itself
            case(2, 4, 2, 6, 4, 24, 1e-6, "uneven"),  # groups of 2, gaps in the positions
            case(2, 6, 3, 5, 4, 32, 0.1, "rows", 500.0),  # a large eps shows where it goes; (B, T); another base
            case(2, 4, 4, 4, 8, 40, 0.1, "uneven", 100.0),  # as many kv heads as query heads
            case(2, 6, 2, 6, 2, 16, 1e-6, "rows"),  # groups of 3, the narrowest head RoPE can turn
        ]

    def layer_shapes(self, config):
        D, F, H, Hkv = config["d_model"], config["d_ff"], config["num_heads"], config["num_kv_heads"]
        kv = Hkv * (D // H)
        return {"W_q": (D, D), "W_k": (kv, D), "W_v": (kv, D), "W_o": (D, D),
                "ffn.w1": (F, D), "ffn.w3": (F, D), "ffn.w2": (D, F)}

    def layer_text(self, name):
        if name in ("ffn.w1", "ffn.w3", "ffn.w2"):
            linear = "nn.Linear(hidden, dim, bias=False)" if name == "ffn.w2" else "nn.Linear(dim, hidden, bias=False)"
            return t("evidence.modern.specs_llama_block.ffn_layer", weight=name.split(".")[1], linear=linear)
        return {"W_k": "nn.Linear(d_model, num_kv_heads * d, bias=False)",
                "W_v": "nn.Linear(d_model, num_kv_heads * d, bias=False)",
                "attn_norm": "RMSNorm(d_model, eps)", "ffn_norm": "RMSNorm(d_model, eps)"}.get(
            name, "nn.Linear(d_model, d_model, bias=False)")

    def check_module(self, module, case):
        D = case.config["d_model"]
        shapes = self.layer_shapes(case.config) | {n: (D,) for n in NORMS}
        return next(filter(None, (check_layer(self, module, name, shape, None, case)
                                  for name, shape in shapes.items())), None)

    def build(self, cls, case, dtype, device="cpu"):
        c = case.config
        module = cls(c["d_model"], c["num_heads"], c["num_kv_heads"], c["d_ff"], rope_base=c["rope_base"],
                     eps=c["eps"])
        bad = self.check_module(module, case)
        if bad:
            return None, bad
        module = module.to(device=device, dtype=dtype).eval()
        with torch.no_grad():
            for name in self.layers:
                module.get_submodule(name).weight.copy_(case.params[f"{name}.weight"])
        return module, None

    def feed(self, module, case, x, grad):
        if grad:
            x["x"].requires_grad_(True)
        if x["positions"] is None:
            return module(x["x"])
        return module(x["x"], x["positions"])

    def variant(self, case, knobs):
        kn = knobs if isinstance(knobs, LlamaKnobs) else LlamaKnobs(attn=knobs)
        return (block(case.params, case.inputs["x"], positions(case), case.config, kn),)

    def distance(self, a, b, var):
        """The first token's row left out where it is NaN in a but not in b (a causal mask that hides the diagonal
        leaves that token no key, and it alone turns NaN): the mistake is told by the other rows. NaN anywhere else
        counts in full."""
        x, y = a[0], b[0]
        if x.shape == y.shape and x.dim() == 3:
            lost = torch.isnan(x).all(-1) & ~torch.isnan(y).any(-1)  # (B, T)
            if bool(lost.any()) and not bool(lost[:, 1:].any()):
                x, y = x[:, 1:], y[:, 1:]
        return closeness(x, y)

    def expected_return(self):
        return t("evidence.modern.specs_llama_block.expected_return")

    def expected_shapes(self, case):
        B, T, D = (case.dims[n] for n in ("B", "T", "D"))
        return {"out": (B, T, D)}

    def visible(self, case):
        return None

    def grad_inputs(self, x, module):
        grads = {n: x[n] for n in self.grad_names}
        for name in self.layers:
            grads[f"{name}.weight"] = module.get_submodule(name).weight
        return grads

    def scale_names(self, case):
        return {}

    def merged(self, case):
        raise NotImplementedError


def positions(case: Case) -> torch.Tensor:
    """The positions the case gives, or 0 .. T-1 when it gives none."""
    pos = case.inputs["positions"]
    return torch.arange(case.dims["T"]) if pos is None else pos


def block_params(gen, config: dict) -> dict:
    """float64 weights by dotted name: unit-gain projections, RMSNorm weights around 1 but not 1."""
    D = config["d_model"]
    params = random_params(gen, LlamaBlockSpec().layer_shapes(config), False)
    for name in NORMS:
        params[f"{name}.weight"] = 1.0 + 0.5 * torch.randn(D, generator=gen, dtype=torch.float64)
    return params
