"""The shape every exercise spec has, and the pieces they share."""

from __future__ import annotations

import ast
import inspect
import types
from dataclasses import dataclass, field

import torch
from torch import nn

from attn_drill import findings, i18n
from attn_drill.i18n import t
from attn_drill.judge.compare import closeness
from attn_drill.judge.trace import FORBIDDEN
from attn_drill.judge.variants.attention import Knobs
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
        for name, x in self.inputs.items():
            if x is None:
                out[name] = None
            else:
                out[name] = x.to(device=device, dtype=dtype if x.is_floating_point() else x.dtype, copy=True)
        return out

    def rounded(self, dtype: torch.dtype) -> "Case":
        """The case with its float inputs and weights rounded to dtype, held in float64: what the reference
        computes from when a run in dtype is held to it."""
        def r(t):
            return t.to(dtype).double() if t is not None and t.is_floating_point() else t

        params = None if self.params is None else {n: r(p) for n, p in self.params.items()}
        return Case(self.label, {n: r(t) for n, t in self.inputs.items()}, self.dims, self.config, params)


def random_mask(gen: torch.Generator, *shape: int) -> torch.Tensor:
    """A bool mask whose every row has a visible key and a hidden one, so that the mask and its
    inverse both leave something to attend to (no NaN rows) and both change the result."""
    mask = torch.rand(*shape, generator=gen) < 0.5
    Tk = shape[-1]
    rows = mask.reshape(-1, Tk)
    on = torch.randint(Tk, (rows.size(0),), generator=gen)
    off = (on + 1 + torch.randint(Tk - 1, (rows.size(0),), generator=gen)) % Tk
    rows[torch.arange(rows.size(0)), on] = True
    rows[torch.arange(rows.size(0)), off] = False
    return rows.reshape(shape)


def roomy_mask(gen: torch.Generator, *shape: int) -> torch.Tensor:
    """random_mask whose every row shows two keys or more: a row with one visible key gives it weight 1 whatever
    the scores, so it tells nothing about them (no scale can be fitted from a case made only of such rows)."""
    mask = random_mask(gen, *shape)
    rows = mask.reshape(-1, shape[-1])
    lone = rows.sum(-1) == 1
    hidden = (~rows).to(torch.uint8).argmax(-1)  # the first hidden key; with Tk >= 3 another stays hidden
    rows[lone, hidden[lone]] = True
    return rows.reshape(shape)


def random_params(gen: torch.Generator, shapes: dict[str, tuple[int, int]], bias: bool) -> dict:
    """float64 weights by layer name, (out_features, in_features) each, with unit gain (x ~ N(0, 1) -> each
    feature ~ N(0, 1)), so scaled scores have spread ~1: softmax is neither flat nor saturated, and a wrong
    scale shows."""
    params = {}
    for name, (n_out, n_in) in shapes.items():
        params[f"{name}.weight"] = torch.randn(n_out, n_in, generator=gen, dtype=torch.float64) / n_in ** 0.5
        if bias:
            params[f"{name}.bias"] = 0.1 * torch.randn(n_out, generator=gen, dtype=torch.float64)
    return params


REFERENCES: dict[str, object] = {}  # reference file name -> its module, loaded once per process


def reference_module(exercise_file: str):
    """The model answer reference/<file>, loaded once per process (tamper.snapshot loads them all before any
    user code runs, and watches their namespaces and classes)."""
    module = REFERENCES.get(exercise_file)
    if module is None:
        module = REFERENCES[exercise_file] = _load_reference(exercise_file)
    return module


CANARY_REFERENCES = ("sdpa.py",)  # tamper.canary compares against it on every check


def load_references(files=None) -> dict[str, object]:
    """The reference modules `files` (every one when None), loaded now if not yet; all those loaded so far.

    A check loads only its exercise's and the canary's (`needed`): each costs a parse and a compile (about 15 ms),
    and one that is never loaded is one the checked code cannot reach either."""
    from attn_drill import paths

    names = sorted(p.name for p in paths.REFERENCE.glob("*.py")) if files is None else sorted(set(files))
    for name in names:
        reference_module(name)
    return REFERENCES


def needed(exercises) -> set[str]:
    """The reference files the checks of `exercises` (catalogue ids) read: each one's own, those its diagnoses read
    (a spec's `reads`), and the canary's. One loaded later would change the watched REFERENCES mid-check."""
    from attn_drill.judge.specs import SPECS

    specs = [SPECS[e] for e in exercises if e in SPECS]
    return {s.file for s in specs} | {f for s in specs for f in s.reads} | set(CANARY_REFERENCES)


class _Gated(ast.NodeTransformer):
    """Puts `__attn_drill_gate__("file: qualname")` first in every function body (after its docstring)."""

    def __init__(self, filename: str):
        self.filename, self.scope = filename, []

    def visit_ClassDef(self, node):
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()
        return node

    def visit_FunctionDef(self, node):
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()
        name = ".".join([*self.scope, node.name])
        call = ast.Expr(ast.Call(ast.Name("__attn_drill_gate__", ast.Load()),
                                 [ast.Constant(f"{self.filename}: {name}")], []))
        first = node.body[0]
        at = 1 if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) and \
            isinstance(first.value.value, str) else 0
        node.body.insert(at, ast.copy_location(call, node.body[min(at, len(node.body) - 1)]))
        return node

    visit_AsyncFunctionDef = visit_FunctionDef


def _load_reference(exercise_file: str):
    """Execute reference/<file> as a module of its own, every function gated (audit.gate): called from the
    user's code, the reference raises instead of answering."""
    from attn_drill import paths
    from attn_drill.judge import audit

    path = paths.REFERENCE / exercise_file
    tree = _Gated(exercise_file).visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    module = types.ModuleType(f"attn_drill_reference_{path.stem}")
    module.__file__ = str(path)
    module.__attn_drill_gate__ = audit.gate
    exec(compile(ast.fix_missing_locations(tree), str(path), "exec"), vars(module))
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


def check_layer(spec, module, name: str, weight: tuple, bias: tuple | None, case: Case) -> Finding | None:
    """The contract's layer `name` (dotted: ffn.w1) exists with a weight of this shape and a bias of this shape
    (None: no bias); the finding that says otherwise, or None."""
    try:
        sub = module.get_submodule(name)
    except AttributeError:
        sub = None
    if not isinstance(getattr(sub, "weight", None), torch.Tensor):
        return findings.make("missing-name", t("evidence.attention.specs_base.not_a_layer", name=name), score=1.0,
                             name=f"self.{name}", where=i18n.t("finding.in_init", layer=spec.layer_text(name)))
    b = getattr(sub, "bias", None)
    has = isinstance(b, torch.Tensor)
    if tuple(sub.weight.shape) != weight or has != (bias is not None) or has and tuple(b.shape) != bias:
        got = t("evidence.attention.specs_base.weight_bias", weight=tuple(sub.weight.shape),
                bias=tuple(b.shape) if has else None)
        want = (t("evidence.attention.specs_base.weight_bias", weight=weight, bias=bias) if bias is not None else
                t("evidence.attention.specs_base.weight_no_bias", weight=weight))
        return findings.make("wrong-signature", t("evidence.attention.specs_base.layer_is", name=name, got=got,
                                                  constructor=spec.constructor(case), want=want),
                             score=1.0, name=f"self.{name}", expected=spec.layer_text(name))
    return None


def resolve_function(module, name: str, expected: str, calls, missing: str = "") -> tuple:
    """(the user's function `name`, None), or (None, the finding) when it is absent, not callable, or cannot
    be called in one of the ways `calls` lists: the (args, kwargs) the checker will use. `missing` is added
    to the missing-name evidence."""
    fn = getattr(module, name, None)
    if fn is None:
        return None, findings.make("missing-name", t("evidence.attention.specs_base.no_top_level", name=name,
                                                     missing=missing), score=1.0, name=name)
    if not callable(fn):
        return None, findings.make("wrong-signature", t("evidence.attention.specs_base.not_a_function", name=name,
                                                        type=type(fn).__name__),
                                   score=1.0, name=name, expected=expected)
    for args, kwargs in calls:
        bad = check_signature(fn, name, args, kwargs, expected)
        if bad:
            return None, bad
    return fn, None


class Spec:
    """Base for an exercise spec.

    The user's result is flattened by `unpack` into a tuple of tensors named by `outputs` (a bare tensor for a
    one-output exercise, (out, weights) for attention, (out, k, v) for a cache...); the reference's result too.
    """

    id: str
    file: str
    reads: tuple[str, ...] = ()  # other model answers its diagnoses check against (the layers read mha.py)
    name: str  # the name the file must define (the first one, when there are several)
    outputs: tuple[str, ...]
    axes: dict[str, tuple[str, ...]]  # output name -> axis names, for locating a mismatch
    forbidden: dict = FORBIDDEN  # substrings of torch function names that do the exercise -> how to say them
    differentiable = True  # the gradients stage applies (not to boolean masks)
    float_inputs = True  # the dtypes stage applies: the inputs come in any float dtype
    # how `attn-drill show` gets the attention weights (judge/show.py): "returned" (the output named "weights"),
    # "sublayers" (every submodule returning (out, 4-D weights), by name), "values" (one-hot values); None: none
    # for a function, "sublayers" for a module (which needs build(cls, case, dtype) and call(..., module=))
    maps: str | None = None
    # the localiser names the model answer's steps by what the call does, and by `step_names` (variable -> kind,
    # where the call cannot say); names_over_calls: the names win even over what the call says (linear
    # attention's products are sums and a normaliser, never scores)
    names_over_calls = False
    # index_steps: the model answer's integer tensors (positions) are steps too, so positions counted from the
    # wrong origin depart where they are made (flash's block keys, ALiBi's positions)
    index_steps = False

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

    def empty_row_case(self, gen: torch.Generator) -> Case | None:
        """The first case with query 1 seeing no key, graded only for NaN (a warning); None without a mask."""
        c = self.cases(gen)[0]
        if not c.masked:
            return None
        mask = c.inputs["mask"].clone()
        mask[..., 1, :] = False
        c.inputs["mask"] = mask
        c.label += t("evidence.attention.specs_base.no_key_for_query_1")
        return c

    def hides(self, case: Case) -> bool:
        """Whether the correct answer hides some keys on this case (a mask given, or one the code must build)."""
        return case.masked

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
        return {t("evidence.attention.specs_base.no_scale"): 1.0, f"1/{d} = 1/d": 1.0 / d,
                t("evidence.attention.specs_base.multiplied", d=d): d ** 0.5}

    def expected_return(self) -> str:
        return t("evidence.attention.specs_base.two_tensors" if len(self.outputs) == 2 else
                 "evidence.attention.specs_base.a_tensor")

    def expected_shapes(self, case: Case) -> dict[str, tuple]:
        raise NotImplementedError

    def grad_inputs(self, x: dict, module) -> dict[str, torch.Tensor]:
        """The leaves whose gradients are compared with the reference's: inputs, then parameters."""
        raise NotImplementedError


SAMPLE = {"d_model": 12, "num_heads": 4, "num_kv_heads": 2, "bias": True, "rope_base": 10000.0,
          "dim": 12, "dk": 5, "dv": 3, "max_distance": 2, "d_ff": 24, "norm_first": False,
          "kv_rank": 8, "d_nope": 4, "d_rope": 4, "d_v": 3}  # bound, never run


def grouped_layer_shapes(config: dict) -> dict[str, tuple[int, int]]:
    """gqa and kv-cache: W_k and W_v give num_kv_heads heads of d = d_model // num_heads features."""
    D, H, Hkv = config["d_model"], config["num_heads"], config["num_kv_heads"]
    kv = Hkv * (D // H)
    return {"W_q": (D, D), "W_k": (kv, D), "W_v": (kv, D), "W_o": (D, D)}


class ModuleSpec(Spec):
    """What the attention modules share (mha, mha-fused, gqa, kv-cache): the class and its forward checked
    against the contract, built from the case's config, its layers checked by name and shape and given the
    reference's weights, gradients for the inputs and every layer. The masked ones (all but kv-cache) also
    share a mask with no head axis, scales that confuse d with d_model, and what each layer should see (for
    the hooks of probes/modules.py: `projected`, `merged`)."""

    layers: tuple[str, ...]  # the nn.Linear layers the contract names
    grad_names: tuple[str, ...]  # the inputs whose gradients are compared
    positional: tuple[str, ...]  # constructor arguments passed by position, by config key
    keyword: str | None = "bias"  # the constructor argument passed by name (None: there is none)
    signature: str  # the contract's __init__, as the user reads it
    forward: tuple  # (args, kwargs) forward must bind (self first), and the contract's forward as the user reads it

    def resolve(self, module):
        cls = getattr(module, self.name, None)
        if cls is None:
            return None, findings.make("missing-name", t("evidence.attention.specs_base.no_top_level", name=self.name,
                                                         missing=""), score=1.0, name=self.name)
        if not (inspect.isclass(cls) and issubclass(cls, nn.Module)):
            return None, findings.make("wrong-signature", t("evidence.attention.specs_base.not_a_module",
                                                            name=self.name),
                                       score=1.0, name=self.name, expected=f"class {self.name}(nn.Module)")
        args = tuple(SAMPLE[k] for k in self.positional)
        kwargs = {self.keyword: SAMPLE[self.keyword]} if self.keyword else {}
        bad = check_signature(cls, self.name, args, kwargs, self.signature)
        if bad:
            return None, bad
        args, kwargs, text = self.forward
        bad = check_signature(cls.forward, f"{self.name}.forward", args, kwargs, text)
        return (None, bad) if bad else (cls, None)

    def layer_shapes(self, config: dict) -> dict[str, tuple[int, int]]:
        """name -> (out_features, in_features) of each nn.Linear the contract names."""
        D = config["d_model"]
        return {name: (D, D) for name in self.layers}

    def layer_text(self, name: str) -> str:
        """How the contract writes the layer."""
        return "nn.Linear(d_model, d_model, bias=bias)"

    def biased(self, case: Case) -> bool:
        """Whether the contract's layers have biases in this case."""
        return case.config.get("bias", False)

    def check_module(self, module: nn.Module, case: Case) -> Finding | None:
        """The contract's layers exist by name, with its shapes, and biases where its config asks for them."""
        bias = self.biased(case)
        for name, (n_out, n_in) in self.layer_shapes(case.config).items():
            sub = getattr(module, name, None)
            if not isinstance(sub, nn.Module) or not isinstance(getattr(sub, "weight", None), torch.Tensor):
                from attn_drill.judge.specs import layouts

                missing = findings.make("missing-name", t("evidence.attention.specs_base.not_a_layer", name=name),
                                        score=1.0, name=f"self.{name}",
                                        where=i18n.t("finding.in_init", layer=self.layer_text(name)))
                return layouts.rename(module, tuple(self.layer_shapes(case.config)), missing)
            shape = tuple(sub.weight.shape)
            has_bias = getattr(sub, "bias", None) is not None
            if shape != (n_out, n_in) or has_bias != bias:
                return findings.make(
                    "wrong-signature",
                    t("evidence.attention.specs_base.linear_is", name=name, shape=shape, has_bias=has_bias,
                      constructor=self.constructor(case), n_in=n_in, n_out=n_out, bias=bias),
                    score=1.0, name=f"self.{name}", expected=self.layer_text(name))
        return None

    def build(self, cls, case: Case, dtype, device="cpu"):
        """(the module cls builds for the case, with the case's weights, None), or (None, why not)."""
        c = case.config
        module = cls(*(c[k] for k in self.positional), **({self.keyword: c[self.keyword]} if self.keyword else {}))
        bad = self.check_module(module, case)
        if bad:
            return None, bad
        return prepare(module, case, self.layers, dtype, device), None

    def feed(self, module, case: Case, x: dict, grad: bool):
        """Run the module on x (copies of the case's inputs), making the gradients' leaves first when grad."""
        raise NotImplementedError

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False, module=None):
        if module is None:
            module, bad = self.build(target, case, dtype, device)
            if bad:
                raise RuntimeError(bad.evidence)
        x = case.cast(dtype, device)  # copies: the user's code may write into them
        return self.feed(module, case, x, grad), module, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        # weights and inputs rounded to dtype, computed in float64: the target a dtype run is held to
        rounded = case.rounded(dtype)
        module, _ = self.build(getattr(reference_module(self.file), self.name), rounded, torch.float64)
        return self.call(None, rounded, grad=grad, module=module)

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
        from attn_drill.judge.probes.modules import locate
        return locate(check)

    def grad_inputs(self, x, module):
        grads = {n: x[n] for n in self.grad_names}
        for name in self.layers:
            sub = getattr(module, name)
            grads[f"{name}.weight"] = sub.weight
            if sub.bias is not None:
                grads[f"{name}.bias"] = sub.bias
        return grads
