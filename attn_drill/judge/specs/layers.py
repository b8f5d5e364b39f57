"""encoder-layer and decoder-layer: a Transformer layer around the user's own MultiHeadAttention.

The checker copies the reference's weights into the layer by dotted name (self_attn.W_q, ff1, norm1 ...),
LayerNorm weights and biases included and random, so a norm in the wrong place shows. The inputs are a
residual stream of another scale than any sub-layer's output (std 3, offset), so a dropped residual cannot
hide; each case is run post-LN or pre-LN, and both are in every check.
"""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.variants import layers as variants_layers
from attn_drill.judge.compare import closeness
from attn_drill.judge.specs.base import Case, ModuleSpec, check_layer, random_mask, random_params
from attn_drill.judge.trace import FORBIDDEN
from attn_drill.judge.variants.layers import LayerKnobs

ATTN = ("W_q", "W_k", "W_v", "W_o")
# every nn.Transformer* layer runs nn.MultiheadAttention (F.multi_head_attention_forward; under the checker's
# function mode the encoder layer's fused fast path is never taken, but it is named in case it is)
LAYER_FORBIDDEN = FORBIDDEN | {
    "multi_head_attention_forward":
        "nn.MultiheadAttention, or an nn.Transformer* layer (F.multi_head_attention_forward)",
    "transformer_encoder_layer_fwd": "nn.TransformerEncoderLayer"}


def residual_stream(gen, *shape: int) -> torch.Tensor:
    """A residual stream of std 3 and a per-feature offset: of another scale than a sub-layer's output (a
    LayerNorm's, or attention over N(0, 1) features), so x + f(x) and f(x) can never be mistaken."""
    offset = torch.randn(shape[-1], generator=gen, dtype=torch.float64)
    return 3.0 * torch.randn(*shape, generator=gen, dtype=torch.float64) + offset


def layer_params(gen, attns: tuple[str, ...], D: int, d_ff: int, norms: int) -> dict:
    shapes = {f"{a}.{w}": (D, D) for a in attns for w in ATTN}
    params = random_params(gen, shapes | {"ff1": (d_ff, D), "ff2": (D, d_ff)}, True)
    for i in range(1, norms + 1):  # not the default (1, 0): a norm moved elsewhere must change the numbers
        params[f"norm{i}.weight"] = 1.0 + 0.5 * torch.randn(D, generator=gen, dtype=torch.float64)
        params[f"norm{i}.bias"] = 0.3 * torch.randn(D, generator=gen, dtype=torch.float64)
    return params


def padding(gen, B: int, T: int) -> torch.Tensor:
    """bool (B, 1, T): keys j < length[b] visible, every length at least 2 and one below T."""
    lengths = torch.randint(2, T, (B,), generator=gen)
    lengths[0] = T
    return (torch.arange(T)[None, :] < lengths[:, None]).unsqueeze(1)


class LayerSpec(ModuleSpec):
    reads = ("mha.py",)  # diagnoses/layers.py checks the attention inside the layer against mha's model answer
    outputs = ("out",)
    axes = {"out": ("batch", "query", "feature")}
    positional = ("d_model", "num_heads", "d_ff")
    keyword = "norm_first"
    forbidden = LAYER_FORBIDDEN
    attns: tuple[str, ...]  # the attention sub-layers
    norms: int

    @property
    def layers(self) -> tuple[str, ...]:
        return tuple(f"{a}.{w}" for a in self.attns for w in ATTN) + ("ff1", "ff2") + tuple(
            f"norm{i}" for i in range(1, self.norms + 1))

    def expected_return(self):
        return t("evidence.cache.specs_layers.expected_return")

    def layer_shapes(self, config):
        D, F = config["d_model"], config["d_ff"]
        shapes = {f"{a}.{w}": (D, D) for a in self.attns for w in ATTN}
        return shapes | {"ff1": (F, D), "ff2": (D, F)}

    def layer_text(self, name):
        if "." in name:
            return t("evidence.cache.specs_layers.attention_layer", attn=name.split('.')[0], weight=name.split('.')[1])
        return {"ff1": "nn.Linear(d_model, d_ff)", "ff2": "nn.Linear(d_ff, d_model)"}.get(name, "nn.LayerNorm(d_model)")

    def _tutorial(self, module, name: str, missing):
        """An attention sub-layer laid out as a tutorial lays it out (self_attn.linears[0]...): say what to rename."""
        from attn_drill.judge.specs import layouts

        if "." not in name:
            return missing
        attn = name.split(".")[0]
        try:
            sub = module.get_submodule(attn)
        except AttributeError:
            return missing
        return layouts.rename(sub, ATTN, missing, owner=f"self.{attn}")

    def check_module(self, module, case):
        D = case.config["d_model"]
        for name, (n_out, n_in) in self.layer_shapes(case.config).items():
            bad = self._check_one(module, name, (n_out, n_in), (n_out,), case)
            if bad:
                return bad
        for i in range(1, self.norms + 1):
            bad = self._check_one(module, f"norm{i}", (D,), (D,), case)
            if bad:
                return bad
        return None

    def _check_one(self, module, name, weight, bias, case):
        bad = check_layer(self, module, name, weight, bias, case)
        return self._tutorial(module, name, bad) if bad and bad.slug == "missing-name" else bad

    def build(self, cls, case, dtype, device="cpu"):
        c = case.config
        module = cls(c["d_model"], c["num_heads"], c["d_ff"], norm_first=c["norm_first"])
        bad = self.check_module(module, case)
        if bad:
            return None, bad
        module = module.to(device=device, dtype=dtype).eval()
        with torch.no_grad():
            for name in self.layers:
                sub = module.get_submodule(name)
                sub.weight.copy_(case.params[f"{name}.weight"])
                sub.bias.copy_(case.params[f"{name}.bias"])
        return module, None

    def grad_inputs(self, x, module):
        grads = {n: x[n] for n in self.grad_names}
        for name in self.layers:
            sub = module.get_submodule(name)
            grads[f"{name}.weight"], grads[f"{name}.bias"] = sub.weight, sub.bias
        return grads

    def distance(self, a, b, var):
        """As for every exercise, except that a token (row) that is NaN in a but not in b is left out: a layer keeps
        tokens apart outside attention, so a mistake that leaves a query no visible key (a misrouted mask) turns
        that token's row to NaN and no other; the mistake is then told by the rows that remain."""
        x, y = a[0], b[0]
        lost = torch.isnan(x).all(-1) & ~torch.isnan(y).any(-1)  # (B, T): whole NaN rows in a only
        if bool(lost.any()) and not bool(lost.all()):
            x, y = x[~lost], y[~lost]
        return closeness(x, y)

    def scale_names(self, case):
        return {}

    # the layer's own locator names the departing sub-layer, residual or norm (localise.py's op-level steps do not
    # see through the user's own MultiHeadAttention into the layer's structure)
    localise = False

    def locate(self, check):
        from attn_drill.judge.probes.layers import locate
        return locate(check)

    @staticmethod
    def label(dims: dict, norm_first: bool) -> str:
        sizes = " ".join(f"{k}={v}" for k, v in dims.items() if k not in ("D",))
        norm = t("evidence.cache.specs_layers.pre_ln") if norm_first else t("evidence.cache.specs_layers.post_ln")
        return t("evidence.cache.specs_layers.label", sizes=sizes, D=dims['D'], norm=norm)


class EncoderLayerSpec(LayerSpec):
    id = "encoder-layer"
    file = "encoder_layer.py"
    name = "EncoderLayer"
    attns = ("self_attn",)
    norms = 2
    grad_names = ("x",)
    signature = "__init__(self, d_model, num_heads, d_ff, norm_first=False)"
    forward = ((None, 1), {"mask": None}, "forward(self, x, mask=None)")

    def cases(self, gen):
        def case(B, H, T, d, d_ff, norm_first, mask_kind):
            D = H * d
            x = residual_stream(gen, B, T, D)
            make = {"full": lambda: random_mask(gen, B, T, T), "keys": lambda: padding(gen, B, T)}
            mask = make[mask_kind]() if mask_kind else None
            dims = {"B": B, "H": H, "T": T, "d": d, "D": D, "d_ff": d_ff}
            label = self.label(dims, norm_first) + (t("evidence.cache.specs_layers.mask", shape=tuple(mask.shape))
                                                     if mask is not None else t("evidence.cache.specs_layers.no_mask"))
            return Case(label, {"x": x, "mask": mask}, dims | {"Tq": T, "Tk": T},
                        config={"d_model": D, "num_heads": H, "d_ff": d_ff, "norm_first": norm_first},
                        params=layer_params(gen, self.attns, D, d_ff, self.norms))

        return [
            case(2, 3, 5, 4, 20, False, "full"),  # every size distinct
            case(2, 3, 5, 4, 20, True, "keys"),  # a (B, 1, T) padding mask
            case(3, 3, 4, 4, 10, False, "full"),  # B == H: a mask with no head axis goes silent here
            case(3, 3, 4, 4, 10, True, "full"),
            case(2, 2, 6, 5, 16, True, None),
            case(2, 4, 3, 2, 12, False, None),
        ]

    def feed(self, module, case, x, grad):
        if grad:
            x["x"].requires_grad_(True)
        kwargs = {"mask": x["mask"]} if x["mask"] is not None else {}
        return module(x["x"], **kwargs)

    def variant(self, case, knobs):
        kn = knobs if isinstance(knobs, LayerKnobs) else LayerKnobs(attn=knobs)
        x = case.inputs
        return (variants_layers.encoder(case.params, case.dims["H"], x["x"], x["mask"],
                                        case.config["norm_first"], kn),)

    def expected_shapes(self, case):
        B, T, D = (case.dims[n] for n in ("B", "T", "D"))
        return {"out": (B, T, D)}


class DecoderLayerSpec(LayerSpec):
    id = "decoder-layer"
    file = "decoder_layer.py"
    name = "DecoderLayer"
    attns = ("self_attn", "cross_attn")
    norms = 3
    grad_names = ("x", "memory")
    signature = "__init__(self, d_model, num_heads, d_ff, norm_first=False)"
    forward = ((None, 1, 2), {"tgt_mask": None, "memory_mask": None},
               "forward(self, x, memory, tgt_mask=None, memory_mask=None)")

    def cases(self, gen):
        def case(B, H, Tq, Tk, d, d_ff, norm_first, tgt_kind, memory_kind):
            D = H * d
            x = residual_stream(gen, B, Tq, D)
            memory = torch.randn(B, Tk, D, generator=gen, dtype=torch.float64)
            tgt = {None: None, "full": lambda: self_visible(random_mask(gen, B, Tq, Tq)),
                   "keys": lambda: padding(gen, B, Tq)}[tgt_kind]
            mem = {None: None, "full": lambda: random_mask(gen, B, Tq, Tk), "keys": lambda: padding(gen, B, Tk)}[
                memory_kind]
            tgt, mem = (tgt() if tgt else None), (mem() if mem else None)
            dims = {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "D": D, "d_ff": d_ff}
            label = self.label(dims, norm_first) + "".join(
                t("evidence.cache.specs_layers.named_mask", name=n, shape=tuple(m.shape)) if m is not None
                else t("evidence.cache.specs_layers.no_named_mask", name=n)
                for n, m in (("tgt_mask", tgt), ("memory_mask", mem)))
            return Case(label, {"x": x, "memory": memory, "tgt_mask": tgt, "memory_mask": mem}, dims,
                        config={"d_model": D, "num_heads": H, "d_ff": d_ff, "norm_first": norm_first},
                        params=layer_params(gen, self.attns, D, d_ff, self.norms))

        return [
            case(2, 3, 5, 7, 4, 20, False, "full", "full"),  # every size distinct, Tq < Tk
            case(2, 3, 5, 7, 4, 20, True, "keys", "keys"),  # padding masks hide keys
            case(3, 3, 4, 4, 4, 10, False, "full", "full"),  # Tq == Tk, B == H: misrouted masks and swapped
            case(3, 3, 4, 4, 4, 10, True, None, "keys"),  # cross-attention's inputs run without raising
            case(2, 2, 6, 3, 5, 16, True, None, None),  # Tq > Tk
            case(2, 4, 4, 4, 2, 12, False, None, None),
        ]

    def feed(self, module, case, x, grad):
        if grad:
            x["x"].requires_grad_(True)
            x["memory"].requires_grad_(True)
        kwargs = {n: x[n] for n in ("tgt_mask", "memory_mask") if x[n] is not None}
        return module(x["x"], x["memory"], **kwargs)

    def variant(self, case, knobs):
        kn = knobs if isinstance(knobs, LayerKnobs) else LayerKnobs(attn=knobs)
        x = case.inputs
        return (variants_layers.decoder(case.params, case.dims["H"], x["x"], x["memory"], x["tgt_mask"],
                                        x["memory_mask"], case.config["norm_first"], kn),)

    def expected_shapes(self, case):
        B, Tq, D = (case.dims[n] for n in ("B", "Tq", "D"))
        return {"out": (B, Tq, D)}

    def empty_row_case(self, gen):
        """The first case with query 1 seeing no key of memory (graded only for NaN, a warning)."""
        c = self.cases(gen)[0]
        mask = c.inputs["memory_mask"].clone()
        mask[..., 1, :] = False
        c.inputs["memory_mask"] = mask
        c.label += t("evidence.cache.specs_layers.no_key_of_memory")
        return c


def self_visible(mask: torch.Tensor) -> torch.Tensor:
    """A (B, Tq, Tq) tgt_mask that shows each query itself, so that with the causal mask every row sees a key."""
    return mask | torch.eye(mask.size(-1), dtype=torch.bool)

