""""What breaks if you ...?": mutate one line of the user's own passing file, run each mutant through the
checker, and ask what the checker named. No torch here: the checks run in a warm worker (process/warm.py).

- `mutants(source)` finds the places worth mutating with the `ast` module (never a regex over the text) and
  returns one `Mutant` per edit: the whole file with that one line changed (k's and v's repeat lines, or
  every use of a `dim` argument, together), kept only if it still parses.
- `what_breaks(path, exercise, seed)` checks the file and a few of its mutants in one warm pool and turns
  the mutants whose verdict is not a pass into multiple-choice questions. The right choice is the first
  finding the checker actually named for that mutant; the wrong ones are other diagnoses of the exercise.
"""

from __future__ import annotations

import ast
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.process import runner
from attn_drill.process.warm import WarmPool

MAX_CHECKED = 8  # mutants checked per call at most: each is one forked check
N_CHOICES = 4
RANK = 4  # repeat_interleave -> repeat assumes the (B, H, T, d) tensors of attention code


@dataclass
class Mutant:
    line: int  # 1-based: the line that differs (the first of them, for the TOGETHER kinds)
    what: str  # "drop the unsqueeze(1) on line 14"
    source: str  # the whole mutated file
    kind: str = ""  # unsqueeze, scale, transpose, dim, dim-arg, repeat, mask, fill, max
    lines: tuple[int, ...] = ()  # every line that differs: (line,), or more for the TOGETHER kinds


# -- finding the mutations -------------------------------------------------------------------------------

def mutants(source: str) -> list[Mutant]:
    """Every mutation of one line of `source` that still parses, in the order of the file, no duplicates.

    The exceptions to "one line" (TOGETHER): repeat_interleave -> repeat changes k's and v's calls together,
    and a function's own `dim` argument is replaced by -1 in all its reductions at once."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    edits = [e for node in ast.walk(tree) for finder in FINDERS for e in finder(node, parents, source)
             if e[1].lineno == e[1].end_lineno]  # a node over several lines is not "one line"
    out, seen = [], set()
    for kind, spots, what in _together(edits, parents):
        mutated = _replace(source, spots)
        if mutated == source or mutated in seen or not _parses(mutated):
            continue
        seen.add(mutated)
        lines = tuple(sorted({node.lineno for node, _ in spots}))
        out.append(Mutant(lines[0], _on(what, lines), mutated, kind, lines))
    return out


# Kinds whose edits with the same words in one function are made together: tiling k but not v, or ignoring
# the dim argument in the max but not in the sum, is a muddle no diagnosis names, not the mistake asked about.
TOGETHER = {"repeat", "dim-arg"}


def _on(what: str, lines: tuple[int, ...]) -> str:
    """A mutation in words with the lines it changes: "drop the unsqueeze(1) on line 14"."""
    if len(lines) == 1:
        return t("practice.explain.mutants.on_line", what=what, line=lines[0])
    return t("practice.explain.mutants.on_lines", what=what, last=lines[-1],
             lines=t("practice.explain.mutants.lines_sep").join(map(str, lines[:-1])))


def _together(edits: list, parents: dict) -> list[tuple[str, list, str]]:
    """(kind, [(node, new text)], what) in the file's order; the TOGETHER edits with the same words in the
    same function merged into one."""
    merged: dict[tuple, tuple[str, list, str]] = {}
    for kind, node, new, what in sorted(edits, key=lambda e: (e[1].lineno, e[1].col_offset)):
        key = (kind, what, _function(node, parents)) if kind in TOGETHER else (kind, node, new)
        merged.setdefault(key, (kind, [], what))[1].append((node, new))
    return list(merged.values())


def _function(node: ast.AST, parents: dict) -> ast.AST | None:
    while node in parents and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = parents[node]
    return node


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def _lines(source: str) -> list[str]:
    """The file's lines as ast numbers them (str.splitlines would also split at form feeds and the like)."""
    return source.split("\n")


def _replace(source: str, spots: list[tuple[ast.AST, str]]) -> str:
    """`source` with each node's text (on one line) replaced; right to left, so earlier columns stay valid.
    ast's columns count UTF-8 bytes."""
    lines = _lines(source)
    for node, new in sorted(spots, key=lambda s: (s[0].lineno, s[0].col_offset), reverse=True):
        raw = lines[node.lineno - 1].encode("utf-8")
        lines[node.lineno - 1] = (raw[:node.col_offset] + new.encode("utf-8") + raw[node.end_col_offset:]).decode()
    return "\n".join(lines)


def _text(source: str, node: ast.AST) -> str:
    return ast.get_source_segment(source, node) or ast.unparse(node)


ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Tuple, ast.Dict)
OPERATORS = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Attribute, ast.Subscript, ast.Await)


def _stand_in(source: str, child: ast.AST, node: ast.AST, parents: dict) -> str:
    """`child`'s text to put where `node` was, in parentheses where an operator around it would bind tighter."""
    text = _text(source, child)
    parent = parents.get(node)
    tight = isinstance(parent, OPERATORS) or isinstance(parent, ast.Call) and parent.func is node
    return f"({text})" if tight and not isinstance(child, ATOMS) else text


def _method(node: ast.AST, *names: str) -> bool:
    """A call `x.name(...)` or `torch.name(...)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names


MODULES = {"torch", "F", "np", "numpy", "functional", "special", "nn", "math"}


def _on_module(call: ast.Call) -> bool:
    """torch.f(x, ...) (the tensor is the first argument), not x.f(...)."""
    recv = call.func.value
    return (isinstance(recv, ast.Name) and recv.id in MODULES
            or isinstance(recv, ast.Attribute) and recv.attr in MODULES)


def _tensor_arg(call: ast.Call) -> tuple[ast.AST | None, list[ast.AST]]:
    """The tensor a method-like call works on and its other positional arguments, in both spellings."""
    if _on_module(call):
        return (call.args[0], call.args[1:]) if call.args else (None, [])
    return call.func.value, list(call.args)


def _kwarg(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _args(source: str, positional: list[ast.AST], call: ast.Call) -> str:
    """A call's arguments as written, less the tensor: "group, dim=1"."""
    return ", ".join([_text(source, a) for a in positional] + [_text(source, k) for k in call.keywords])


def _int(node: ast.AST | None) -> int | None:
    """A literal int, negative ones included."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _int(node.operand) is not None:
        return -_int(node.operand)
    return None


# -- the kinds: each yields (kind, node to replace, its new text, what in words) ---------------------------

def drop_unsqueeze(node, parents, source):
    """x.unsqueeze(1) / torch.unsqueeze(x, 1) -> x; x[:, None] -> x (only when the rest are full slices)."""
    if _method(node, "unsqueeze"):
        tensor, rest = _tensor_arg(node)
        if tensor is not None:
            yield "unsqueeze", node, _stand_in(source, tensor, node, parents), \
                t("practice.explain.mutants.drop_unsqueeze", args=_args(source, rest, node))
    elif isinstance(node, ast.Subscript):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        nones = [p for p in parts if isinstance(p, ast.Constant) and p.value is None]
        full = all(p in nones or _full_slice(p) for p in parts)
        if nones and full:
            yield "unsqueeze", node, _text(source, node.value), \
                t("practice.explain.mutants.drop_index", index=_text(source, node.slice))


def _full_slice(node: ast.AST) -> bool:
    plain = isinstance(node, ast.Slice) and node.lower is None and node.upper is None and node.step is None
    return plain or isinstance(node, ast.Constant) and node.value is Ellipsis


def drop_scale(node, parents, source):
    """a / sqrt(d), a * scale, scale * a, a * d ** -0.5 -> a; `s /= sqrt(d)` -> pass."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Mult)):
        if _is_scale(node.right):
            how = "drop_division" if isinstance(node.op, ast.Div) else "drop_multiplication"
            yield "scale", node, _stand_in(source, node.left, node, parents), \
                t(f"practice.explain.mutants.{how}", scale=_text(source, node.right))
        elif isinstance(node.op, ast.Mult) and _is_scale(node.left):
            yield "scale", node, _stand_in(source, node.right, node, parents), \
                t("practice.explain.mutants.drop_multiplication", scale=_text(source, node.left))
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Div, ast.Mult)) and _is_scale(node.value):
        yield "scale", node, "pass", t("practice.explain.mutants.drop_scaling", code=_text(source, node))
    elif _method(node, "div", "mul", "true_divide", "multiply", "div_", "mul_"):
        tensor, rest = _tensor_arg(node)  # x.div(math.sqrt(d)), torch.mul(x, scale)
        if tensor is not None and len(rest) == 1 and not node.keywords and _is_scale(rest[0]):
            yield "scale", node, _stand_in(source, tensor, node, parents), \
                t("practice.explain.mutants.drop_call", method=node.func.attr, arg=_text(source, rest[0]))


def _is_scale(node: ast.AST) -> bool:
    """sqrt(...), rsqrt(...), x ** 0.5 or ** -0.5, 1 / one of those, or a name that says scale or sqrt."""
    if isinstance(node, ast.Call):
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        return name in ("sqrt", "rsqrt")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        e = node.right
        e = -e.operand.value if isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant) else \
            getattr(e, "value", None)
        return e in (0.5, -0.5)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return isinstance(node.left, ast.Constant) and node.left.value in (1, 1.0) and _is_scale(node.right)
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return isinstance(name, str) and any(word in name.lower() for word in SCALE_WORDS)


SCALE_WORDS = ("scale", "scaling", "sqrt")  # scale, self.scaling, sm_scale, inv_sqrt_d


TRANSPOSES = ("transpose", "permute", "swapaxes", "swapdims", "movedim")
RESHAPES = ("reshape", "view", "flatten", "matmul", "unflatten")


def drop_transpose(node, parents, source):
    """x.transpose(1, 2) / x.permute(...) / x.mT -> x, where the result goes into a reshape, view or matmul."""
    if _method(node, *TRANSPOSES):
        tensor, rest = _tensor_arg(node)
        label = f"{node.func.attr}({_args(source, rest, node)})"
    elif isinstance(node, ast.Attribute) and node.attr in ("mT", "T") \
            and getattr(parents.get(node), "func", None) is not node:  # x.T, not a method named T
        tensor, label = node.value, f".{node.attr}"
    else:
        return
    if tensor is not None and _feeds_reshape_or_matmul(node, parents):
        yield "transpose", node, _stand_in(source, tensor, node, parents), \
            t("practice.explain.mutants.drop", what=label)


def _feeds_reshape_or_matmul(node, parents) -> bool:
    """Whether this value goes (through .contiguous()) into .reshape/.view, a `@` or a matmul call."""
    parent = parents.get(node)
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.MatMult):
        return True
    if isinstance(parent, ast.Attribute) and parent.value is node:
        call = parents.get(parent)
        if parent.attr in RESHAPES:
            return True
        if parent.attr == "contiguous" and isinstance(call, ast.Call):
            return _feeds_reshape_or_matmul(call, parents)
    if isinstance(parent, ast.Call) and node in parent.args and _method(parent, *RESHAPES, "bmm", "mm"):
        return True
    return False


REDUCTIONS = ("softmax", "sum", "max", "amax", "logsumexp")


def change_dim(node, parents, source):
    """The dim of a softmax / sum / max / amax / logsumexp: -1 <-> -2, n -> n +- 1, a variable `dim` -> -1."""
    if not _method(node, *REDUCTIONS):
        return
    kw = _kwarg(node, "dim")
    if kw is not None:
        old = kw.value
    else:
        _, rest = _tensor_arg(node)
        # a positional name other than dim/axis may be a tensor: torch.max(a, b)
        old = rest[0] if rest and (_int(rest[0]) is not None or _names_dim(rest[0])) else None
    if old is None:
        return
    n = _int(old)
    if n is None and not isinstance(old, ast.Name):
        return
    new = "-1" if n is None else str({-1: -2, -2: -1, 0: 1}.get(n, n - 1 if n > 0 else n + 1))
    if n is None:  # the function's own dim argument: ignored everywhere at once (see TOGETHER)
        yield "dim-arg", old, new, t("practice.explain.mutants.use_dim", new=new, old=_text(source, old))
    else:
        yield "dim", old, new, t("practice.explain.mutants.use_dim_in", new=new, old=_text(source, old),
                                 method=node.func.attr)


def _names_dim(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and ("dim" in node.id or "axis" in node.id)


def interleave_to_repeat(node, parents, source):
    """k.repeat_interleave(g, dim=1) -> k.repeat(1, g, 1, 1): the same shape, the kv heads tiled instead."""
    if not _method(node, "repeat_interleave"):
        return
    tensor, rest = _tensor_arg(node)
    reps = rest[0] if rest else getattr(_kwarg(node, "repeats"), "value", None)
    dim = _int(rest[1] if len(rest) > 1 else getattr(_kwarg(node, "dim"), "value", None))
    if tensor is None or reps is None or dim is None or dim == 0 or not -RANK <= dim < RANK:
        # no dim: repeat_interleave flattens (repeat has no such form); dim 0: heads folded into the batch, of
        # a rank the source does not say
        return
    counts = ["1"] * RANK
    counts[dim % RANK] = _text(source, reps)
    receiver = _text(source, tensor) if isinstance(tensor, ATOMS) else f"({_text(source, tensor)})"
    new = f"{receiver}.repeat({', '.join(counts)})"
    old = f"repeat_interleave({_args(source, rest, node)})"
    yield "repeat", node, new, t("practice.explain.mutants.use_repeat", counts=", ".join(counts), old=old)


MASK_CALLS = ("masked_fill", "masked_fill_", "where")


def flip_mask(node, parents, source):
    """~m -> m; m.logical_not() -> m; `== 0` <-> `!= 0` in a mask test; masked_fill(m, ...) -> masked_fill(~m, ...)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        yield "mask", node, _stand_in(source, node.operand, node, parents), \
            t("practice.explain.mutants.write", new=_text(source, node.operand), old=_text(source, node))
    elif _method(node, "logical_not"):
        tensor, _ = _tensor_arg(node)
        if tensor is not None:
            yield "mask", node, _stand_in(source, tensor, node, parents), \
                t("practice.explain.mutants.write", new=_text(source, tensor), old=_text(source, node))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
        sides = (node.left, node.comparators[0])
        flags = any(isinstance(s, ast.Constant) and s.value in (0, 1) and type(s.value) in (int, bool) for s in sides)
        if flags and (_in_mask_call(node, parents) or _mentions_mask(node)):
            op = "!=" if isinstance(node.ops[0], ast.Eq) else "=="
            new = f"{_text(source, node.left)} {op} {_text(source, node.comparators[0])}"
            yield "mask", node, new, t("practice.explain.mutants.write", new=new, old=_text(source, node))
    elif _method(node, *MASK_CALLS):
        mask = _mask_arg(node)
        if isinstance(mask, (ast.Name, ast.Attribute, ast.Subscript)):
            new = f"~{_text(source, mask)}"
            yield "mask", mask, new, t("practice.explain.mutants.write", new=new, old=_text(source, mask))


def _mask_arg(call: ast.Call) -> ast.AST | None:
    """The boolean argument: torch.where(cond, a, b), x.where(cond, y), x.masked_fill(mask, v),
    torch.masked_fill(x, mask, v)."""
    kw = _kwarg(call, "condition" if call.func.attr == "where" else "mask")
    if kw is not None:
        return kw.value
    at = 1 if call.func.attr != "where" and _on_module(call) else 0
    return call.args[at] if len(call.args) > at else None


def _in_mask_call(node, parents) -> bool:
    while node in parents:
        node = parents[node]
        if _method(node, *MASK_CALLS):
            return True
        if isinstance(node, ast.stmt):
            return False
    return False


def _mentions_mask(node) -> bool:
    return any(isinstance(n, ast.Name) and "mask" in n.id.lower() or isinstance(n, ast.Attribute) and
               "mask" in n.attr.lower() for n in ast.walk(node))


def fill_zero(node, parents, source):
    """masked_fill(m, float('-inf')) -> masked_fill(m, 0.0); also torch.where(m, s, -inf) and -1e9 or finfo.min."""
    if not _method(node, *MASK_CALLS):
        return
    # the value hidden entries get: masked_fill's value, or either branch of a where (where(m, s, -inf),
    # where(~m, -inf, s))
    if node.func.attr == "where":
        values = node.args[1:] + [k.value for k in node.keywords if k.arg in ("input", "other")]
    else:
        at = 2 if _on_module(node) else 1  # torch.masked_fill(x, m, v), x.masked_fill(m, v)
        values = [kw.value] if (kw := _kwarg(node, "value")) is not None else node.args[at:at + 1]
    for value in values:
        if _very_negative(value):
            yield "fill", value, "0.0", t("practice.explain.mutants.fill", old=_text(source, value))


def _very_negative(node: ast.AST) -> bool:
    """float('-inf'), -float('inf'), -math.inf, -1e9, torch.finfo(...).min and the like."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "float" and node.args:
        arg = node.args[0]
        return isinstance(arg, ast.Constant) and str(arg.value).strip().lower() in ("-inf", "-infinity")
    if isinstance(node, ast.Attribute) and node.attr == "min":
        return _method(node.value, "finfo")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        x = node.operand
        if isinstance(x, ast.Constant) and isinstance(x.value, (int, float)):
            return x.value >= 1e4
        is_inf = isinstance(x, ast.Attribute) and x.attr == "inf" or \
            isinstance(x, ast.Call) and getattr(x.func, "id", "") == "float" and x.args and \
            isinstance(x.args[0], ast.Constant) and str(x.args[0].value).lower() in ("inf", "infinity")
        is_max = isinstance(x, ast.Attribute) and x.attr == "max" and _method(x.value, "finfo")
        return bool(is_inf or is_max)
    return False


MAXES = ("max", "amax", "maximum")


def drop_max(node, parents, source):
    """exp(x - m) -> exp(x), m being a max (x.amax(...), x.max(...).values, a name assigned from one)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and _is_max(node.right, parents) \
            and not _is_max(node.left, parents):  # m_old - m_new is the rescale, another thing
        yield "max", node, _stand_in(source, node.left, node, parents), \
            t("practice.explain.mutants.drop_max", max=_text(source, node.right))


def _is_max(node: ast.AST, parents: dict, seen: frozenset = frozenset()) -> bool:
    """A max: x.amax(...), x.max(...).values, torch.maximum(...), or a name assigned one somewhere in its
    function, through a masked_fill or a where (shift = m_new.masked_fill(...), m_new = torch.maximum(...))."""
    node = _strip(node)
    if _method(node, *MAXES):
        return True
    if _method(node, "where"):  # torch.where(isinf(m), 0, m): a guarded max
        return any(_is_max(a, parents, seen) for a in node.args[1:])
    if not isinstance(node, ast.Name) or node.id in seen:
        return False
    return any(_is_max(value, parents, seen | {node.id}) for a in ast.walk(_function(node, parents))
               if isinstance(a, ast.Assign) for name, value in _bindings(a) if name == node.id)


def _bindings(assign: ast.Assign):
    """(name, value) for each name an assignment binds: m = ..., a, b = x, y, and m, _ = x.max(-1) (m only)."""
    for target in assign.targets:
        if isinstance(target, ast.Name):
            yield target.id, assign.value
        elif isinstance(target, ast.Tuple) and isinstance(assign.value, ast.Tuple) \
                and len(target.elts) == len(assign.value.elts):
            yield from ((t.id, v) for t, v in zip(target.elts, assign.value.elts) if isinstance(t, ast.Name))
        elif isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
            yield target.elts[0].id, assign.value


KEEPS_MAX = ("values", "detach", "masked_fill", "clamp", "clamp_min", "to", "float", "unsqueeze", "nan_to_num")


def _strip(node: ast.AST) -> ast.AST:
    """What is under .values, [0], .detach(), .masked_fill(...): the value still is that max."""
    while True:
        if isinstance(node, ast.Subscript) or isinstance(node, ast.Attribute) and node.attr == "values":
            node = node.value
        elif _method(node, *KEEPS_MAX) and not _on_module(node):
            node = node.func.value
        else:
            return node


FINDERS = (drop_unsqueeze, drop_scale, drop_transpose, change_dim, interleave_to_repeat, flip_mask, fill_zero, drop_max)


# -- asking ----------------------------------------------------------------------------------------------

# The fallback pool of wrong choices, for an exercise that declares no mistakes
_ATTENTION = ("missing-scale", "wrong-scale", "softmax-wrong-dim", "mask-inverted", "mask-ignored",
              "mask-after-softmax", "nan-output", "wrong-output-shape", "exception")
_MODULE = _ATTENTION + ("mask-head-broadcast", "wrong-head-split", "wrong-head-merge", "missing-output-projection",
                       "mask-fill-zero", "scale-after-softmax", "wrong-projection", "projection-before-merge")


def _choice_params(slug: str) -> dict:
    """A title with a parameter, as a choice: the parameter's most common value."""
    return {"mask-fill-zero": {"value": "0"},
            "missing-residual": {"sublayer": t("practice.explain.mutants.a_sublayer")}}.get(slug, {})


# A title alone does not say what happens for these: the contract's words do (practice.explain.mutants.<slug>)
CONSEQUENCE = {"mask-head-broadcast"}
# values-mismatch: "no known mistake explains it" teaches nothing, and the mutant's true story may be one of
# the wrong choices (a sum over the wrong axis is named so when the max was taken over the right one)
NOT_ASKED = {"values-mismatch", "internal-error", "torch-modified", "checker-reached", "syntax-error", "timeout",
             "crash"}
GENERIC = {"exception", "wrong-output-shape", "nan-output"}  # symptoms, asked last
# never a wrong choice: what a one-line change of a passing file does not do (process, API and dtype-stage
# verdicts, the memory and overflow warnings)
NOT_A_CHOICE = NOT_ASKED | {"missing-name", "wrong-signature", "wrong-return-type", "input-modified", "backward-fails",
                            "dtype-not-preserved", "device-mismatch", "forbidden-builtin", "output-reused",
                            "nan-on-empty-row", "full-scores-materialized", "mask-fill-overflow"}


def plausible(exercise: str) -> tuple[str, ...]:
    """The wrong choices an exercise's questions draw from: the mistakes its catalogue entry declares."""
    from attn_drill import catalogue

    ex = catalogue.get(exercise)
    return tuple(s for s in ex.mistakes if s not in NOT_A_CHOICE) if ex and ex.mistakes else _ATTENTION


def choice_text(slug: str, title: str) -> str:
    """A finding as a choice: its title; "an error: RuntimeError" for an exception; the consequence where the
    title does not say it."""
    if slug == "exception":
        before, _, after = findings.WORDING["exception"][1].partition("{type}")
        kind = title[len(before):len(title) - len(after) or None] if title.startswith(before) else title
        return t("practice.explain.mutants.an_error", type=kind)
    if slug in CONSEQUENCE:
        return t("practice.explain.mutants.consequence", title=title, consequence=t(f"practice.explain.mutants.{slug}"))
    return title


def _slug_choice(slug: str, exercise: str = "") -> str:
    """A diagnosis of the exercise as a wrong choice, in findings.py's words (the exercise's own, where it has
    them: mla's missing scale is sqrt(d_nope + d_rope))."""
    if slug == "exception":
        return t("practice.explain.mutants.an_error", type="RuntimeError")
    own = findings.mistakes().get(slug, {}).get(exercise)
    title = own.get("title") if isinstance(own, dict) else None
    return choice_text(slug, (title or findings.WORDING[slug][1]).format(**_choice_params(slug)))


def what_breaks(path: Path, exercise: str, seed: int, limit: int = 2, *,
                timeout: float = runner.DEFAULT_TIMEOUT, pool: WarmPool | None = None) -> list[dict]:
    """Up to `limit` "What breaks if you ...?" questions on the user's file: each a mutant the checker fails,
    with the checker's first finding as the answer. [] when the file does not pass or nothing breaks.

    The checks fork from one warm server: `pool` if the caller holds one for this exercise (a mock's, kept
    open), else one started and closed here."""
    path = Path(path)
    source = path.read_text(encoding="utf-8")
    order = _order(mutants(source), seed)[:MAX_CHECKED]
    if not order or limit <= 0:
        return []
    if pool is None:
        with WarmPool([exercise]) as own:
            failed = _check_mutants(path, exercise, order, seed, timeout, own.spawn, limit)
    else:
        failed = _check_mutants(path, exercise, order, seed, timeout, pool.spawn, limit)
    rng = random.Random(seed)
    verdicts = [_first_error(r).slug for _, r in failed]
    return [_question(m, r, exercise, source, verdicts, rng) for m, r in _pick(failed, limit)]


def _check_mutants(path: Path, exercise: str, order: list[Mutant], seed: int, timeout: float, spawn,
                   limit: int) -> list[tuple[Mutant, object]]:
    """Check the file, then its mutants in `order`: (mutant, report) for each one that fails, none at all if
    the file itself does not pass. Stops once `limit` different mistakes (not mere symptoms) are named."""
    failed: list[tuple[Mutant, object]] = []
    with tempfile.TemporaryDirectory(prefix="attn-drill-mutants-") as tmp:
        jobs = [runner.Job(path, exercise)]
        for i, m in enumerate(order):
            folder = Path(tmp) / f"m{i}"
            folder.mkdir()
            (folder / path.name).write_text(m.source, encoding="utf-8")  # same name: the same exercise and imports
            jobs.append(runner.Job(folder / path.name, exercise, imports_from=path.parent))  # its helpers too
        reports = runner.run_checks(jobs, seed=seed, timeout=timeout, spawn=spawn, on_gpu=False)
        try:
            if not next(reports).passed:
                return []  # questions on a failing file would be about code that is wrong already
            for m, report in zip(order, reports):
                first = _first_error(report)
                if first is None or first.slug in NOT_ASKED:
                    continue  # still passes (not asked), or a verdict that is no lesson
                failed.append((m, report))
                named = {_first_error(r).slug for _, r in failed} - GENERIC
                if len(named) >= limit:
                    break  # the remaining checks could not change the pick
        finally:
            reports.close()  # ends the runner's loop: no check runs for the mutants left
    return failed


def _order(found: list[Mutant], seed: int) -> list[Mutant]:
    """The mutants to check, one of each kind in turn, shuffled by the seed: deterministic, and varied."""
    rng = random.Random(seed)
    by_kind: dict[str, list[Mutant]] = {}
    for m in found:
        by_kind.setdefault(m.kind, []).append(m)
    for group in by_kind.values():
        rng.shuffle(group)
    kinds = sorted(by_kind)
    rng.shuffle(kinds)
    out = []
    while any(by_kind.values()):
        for k in kinds:
            if by_kind[k]:
                out.append(by_kind[k].pop(0))
    return out


def _first_error(report):
    report.sort_findings()  # errors first, the likeliest cause first, as `check` shows them
    errors = report.errors
    return errors[0] if errors else None


def _pick(picked: list, limit: int) -> list:
    """At most `limit` mutants, named mistakes before symptoms, each verdict once before any repeats."""
    ranked = sorted(picked, key=lambda p: _first_error(p[1]).slug in GENERIC)  # stable: keeps the seed's order
    chosen, slugs = [], set()
    for i, (_, report) in enumerate(ranked):
        if _first_error(report).slug not in slugs:
            chosen.append(i)
            slugs.add(_first_error(report).slug)
    chosen += [i for i in range(len(ranked)) if i not in chosen]
    return sorted((ranked[i] for i in chosen[:limit]), key=lambda p: p[0].line)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def _question(m: Mutant, report, exercise: str, source: str, verdicts: list[str], rng: random.Random) -> dict:
    first = _first_error(report)
    right = choice_text(first.slug, findings.without_sublayer(first.title))  # said as the other choices are
    named = {f.slug for f in report.errors}  # a finding the checker also named is not a wrong answer
    wrong: list[str] = []
    # other mutants' verdicts first: real consequences of nearby edits, then the exercise's other diagnoses
    pool = list(dict.fromkeys(verdicts))
    rest = [s for s in plausible(exercise) if s in findings.WORDING and s not in pool]
    rng.shuffle(rest)
    spare = [s for s in _MODULE if s not in pool + rest]  # never fewer than four choices
    for slug in pool + rest + spare:
        text = _slug_choice(slug, exercise) if slug in findings.WORDING else None
        if slug in named or text is None or text == right or text in wrong:
            continue
        wrong.append(text)
        if len(wrong) == N_CHOICES - 1:
            break
    choices = wrong + [right]
    rng.shuffle(choices)
    evidence = _short(first.evidence.splitlines()[0]) if first.evidence else ""
    return {
        "kind": "breaks",
        "line": m.line,
        "code": _lines(source)[m.line - 1].strip(),
        "prompt": t("practice.explain.mutants.prompt", what=m.what),
        "choices": choices,
        "answer": choices.index(right),
        "explain": t("practice.explain.mutants.named_evidence", slug=first.slug, title=first.title, evidence=evidence)
        if evidence else t("practice.explain.mutants.named", slug=first.slug, title=first.title),
        "slug": first.slug,
        "mutated": _lines(m.source)[m.line - 1].strip(),  # the line as the mutant has it
    }
