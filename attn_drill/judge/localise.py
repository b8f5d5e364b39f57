"""Where does the user's computation first depart from the reference? Karpathy's step-by-step `cmp()`, automated.

Both run the same case under the tracer, which keeps every tensor each torch call makes, with its line. The
reference's tensors are its named steps: each is labelled by what the call does (a projection, the scores, the
scale, the mask, the softmax, the weighted sum, the head split or merge) and by the variable its line assigns.

A user tensor reproduces a step when it holds the same numbers up to a layout: the same shape, a permutation
of the axes, a reshape, or one slice of a head axis (a loop over heads). A step is right when it, or a step
computed from it, is reproduced; the departure is the first step that is not right while every step it was
computed from is. Its nearest user tensor gives the user's line and what differs: a constant factor, finite
values where the reference hides keys with -inf, rows that sum to 1 over another axis, the numbers of another
step (W_k used for the values), the right numbers in another arrangement, a reduction to another shape (a running
sum taken whole). The line is where the numbers went wrong: a tensor the model answer never makes, a changed copy
of the step's input (an input centred before a norm), is that line when it comes first.

Where a spec's steps are indices and the user may loop over sequences of their own lengths (paged attention,
`per_sequence`), integer tensors are steps too, and a step is reproduced when every sequence's part of it is (its
first lengths[b] tokens): one sequence read right says nothing of the others.
"""

from __future__ import annotations

import ast
import collections
import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from attn_drill.i18n import t
from attn_drill.judge.assignments import Assignments, number
from attn_drill.judge.trace import Tracer

BRANCHES = 4  # departing steps looked at after the first, for one its tensor was made from
MAX_OPS = 3000  # per run: a loop over many blocks keeps its first ones (enough to find a departure)
SAME = 1e-6  # relative distance under which two tensors are the same numbers

SCORES = {"matmul", "__matmul__", "einsum", "bmm", "baddbmm"}
LAYOUT = {"view", "reshape", "transpose", "permute", "contiguous", "flatten", "unflatten", "unsqueeze", "squeeze",
          "split", "chunk", "unbind", "__getitem__", "expand", "repeat", "repeat_interleave", "movedim", "t"}
KEEPS = LAYOUT | {"to", "float", "double", "half", "bfloat16", "type_as", "clone", "detach"}  # the same numbers
SCALING = {"__truediv__", "div", "__mul__", "mul", "__rmul__", "true_divide", "div_", "mul_", "__itruediv__",
           "__imul__"}
MASKING = {"masked_fill", "masked_fill_", "where", "__add__", "add", "__iadd__"}
SOFTMAX = {"softmax", "_softmax", "exp", "log_softmax"}
REPEAT = {"repeat_interleave", "repeat"}
FILLS = {"masked_fill", "masked_fill_", "where"}  # calls that apply a mask
TERMS = {"add", "sub", "add_", "sub_", "__add__", "__sub__", "__radd__", "__rsub__", "__iadd__", "__isub__", "rsub"}
BEFORE_SOFTMAX = {"scores", "scale", "mask"}  # kinds of step made before any softmax
MASK_RELATIONS = {"shows", "hides", "hides-and-shows", "kept-finite", "filled", "moved"}
LINEAR = {"linear", "addmm"}
# kinds read off the call itself, which a spec's step_names never rename
STRUCTURE = {"projection", "output projection", "scores", "weighted sum", "head split", "merge", "kv repeat"}


def _say(key: str, /, **params) -> str:
    """This module's sentence `key` (i18n/<lang>/evidence/core.toml, [localise])."""
    return t(f"evidence.core.localise.{key}", **params)


@dataclass
class Op:
    line: int | None
    name: str
    out: torch.Tensor  # a float64 copy, taken when the call returned (later in-place writes do not change it)
    parents: tuple[int, ...]  # indices of the ops whose tensors this call read
    boolean: bool = False  # the call made a bool tensor (out holds it as 0.0 / 1.0)
    label: str = ""  # reference only: the step, in words
    kind: str = ""  # reference only: projection | head split | scores | scale | mask | softmax | ...
    aux: bool = False  # reference only: a boolean helper (a mask derived from the input mask), not a step
    free: bool = False  # made from no data: only from shapes and constants (arange, the RoPE frequencies)
    copied: bool = False  # a mask that holds the pattern of a tensor the user's lines did not make (the input's)
    var: str = ""  # reference only: the variable its line assigns ("return" for a return statement)
    index: bool = False  # an integer tensor (positions, block ids): the user's always, the reference's only where
    # the spec's steps are indices (an index stands only for an index)
    numbers: tuple = ()  # the Python floats (and lists of them) the call was given (`s * scale`, torch.tensor(slopes))
    ints: tuple = ()  # the Python ints it was given (`kj - qi < Tk - Tq`: a shift a comparison adds back)
    ident: int = 0  # the user's only: id() of the tensor itself, kept alive by the recorder (where it was handed on)
    sites: tuple[int, ...] = ()  # the lines that called the function `line` is in, innermost first (a helper's calls)


@dataclass
class Departure:
    step: str  # "the scale (scores)"
    kind: str  # the kind of step, for the fix text
    line: int | None  # the user's line that made the nearest tensor
    how: str  # what differs there, in words
    relation: str = "differs"  # what differs, as a code (RELATIONS): the departure's name for the mistake
    params: dict = field(default_factory=dict)  # the relation's numbers, for the finding's wording (a fill value)
    line_in_how: bool = False  # `how` says the line itself (a result thrown away there is not the step)
    step_line: int | None = None  # the line of the step's own tensor, when `line` is an earlier one it came from
    op: int | None = None  # the user's op that stands for the step, where it is its own

    def said(self) -> str:
        if self.line and not self.line_in_how:
            return _say("departs_at_line", step=self.step, line=self.line, how=self.how)
        return _say("departs", step=self.step, how=self.how)


class Recorder:
    """The tracer's record hook: keeps a float64 copy of every tensor a call from the traced file makes."""

    def __init__(self, skip: set[int] = frozenset(), indices: bool = False):
        self.skip = skip  # lines not to keep (the reference's constructors: its weights are the case's)
        self.indices = indices  # keep integer tensors too: where the steps are indices (paged attention's blocks)
        self.ops: list[Op] = []
        self.made: dict[int, int] = {}  # id(tensor) -> index of the op that made it last
        self.alive: list[torch.Tensor] = []
        self.ours: set[int] = set()  # ids of every tensor the traced lines made, integer ones too (aranges)

    wants_sites = True  # the tracer hands each call's outer lines in the user's file (a helper's calls)

    def __call__(self, line, name, args, kwargs, out, sites: tuple[int, ...] = ()):
        if len(self.ops) >= MAX_OPS or line in self.skip:
            return
        inplace = name.endswith("_") or name.startswith("__i")
        if not inplace and args and isinstance(args[0], torch.Tensor) and out is args[0]:
            return  # x.to(x.dtype), x.contiguous(): the same tensor handed back is no new step
        read = list(_tensors((args, kwargs)))
        parents = tuple(sorted({self.made[id(x)] for x in read if id(x) in self.made}))
        # no input, weight or cache read, and only from tensors made that way (`x.to(q)` reads q's dtype alone)
        data = read[:1] if name in ("to", "type_as") else read
        free = all(id(x) in self.made for x in data) and all(self.ops[self.made[id(x)]].free for x in data
                                                              if id(x) in self.made)
        given = [x for x in read if id(x) not in self.ours]  # the input, the weights: made by no traced line
        numbers = tuple(n for x in (*args, *kwargs.values()) for n in [number(x)] if n is not None)
        ints = tuple(x for a in (*args, *kwargs.values()) for x in (a if type(a) in (list, tuple) else (a,))
                     if type(x) is int)  # `view(B, T, d)`, `split([dn, dv])` too
        for x in _tensors(out):
            self.ours.add(id(x))
            self.alive.append(x)  # held, so that no later tensor gets its id
            index = self.indices and not x.is_floating_point() and not x.is_complex() and x.dtype != torch.bool
            if x.is_floating_point() or x.dtype == torch.bool or index:
                self.made[id(x)] = len(self.ops)
                self.ops.append(Op(line, name, x.detach().to("cpu", torch.float64, copy=True), parents,
                                   boolean=x.dtype == torch.bool, free=free,
                                   copied=x.dtype == torch.bool and _copies(x, given), index=index,
                                   numbers=numbers, ints=ints, ident=id(x), sites=sites))


def _copies(mask: torch.Tensor, given: list[torch.Tensor]) -> bool:
    """The mask holds the pattern of one of the given tensors (the input's mask, converted or negated)."""
    return any(x.numel() > 1 and same_pattern(x.detach().cpu(), mask.detach().cpu()) for x in given)


def record(path: Path, call, skip: set[int] = frozenset(), indices: bool = False) -> list[Op]:
    """Run call() under a tracer that keeps every tensor made from `path`'s lines; never raises."""
    keep = Recorder(skip, indices)
    try:
        with Tracer(path, {}, record=keep), torch.no_grad():
            call()
    except BaseException:  # noqa: BLE001 - what ran until the error is still worth aligning
        pass
    return keep.ops


def _tensors(obj, depth: int = 0):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 3 and isinstance(obj, (tuple, list)):
        for x in obj:
            yield from _tensors(x, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x, depth + 1)


# --- the reference's steps -----------------------------------------------------------------------------

def label_steps(ops: list[Op], source: str, names: dict[str, str] | None = None, over_calls: bool = False) -> None:
    """Give each reference op its kind and label, from what the call does and the variable its line assigns.
    A line keeps the kind its first run gave it (a loop's later blocks are the same steps); `names` (the spec's
    step_names) name steps by variable where the call alone cannot say (flash's running max, rope's angles), and
    with `over_calls` (Spec.names_over_calls) even where it can."""
    targets = assigned(source)
    seen_softmax = seen_product = False
    memo: dict[tuple, str] = {}
    boolish: list[bool] = []
    arranged: list[bool] = []  # by op: a layout of the inputs alone
    for op in ops:
        # a bool tensor, or one made from bool tensors only (mask.float(), an additive bias built from a mask)
        boolish.append(op.boolean or bool(op.parents) and all(boolish[p] for p in op.parents))
        var = targets.get(op.line, "")
        key = (op.line, op.name)
        if key not in memo:
            masked = any(boolish[p] for p in op.parents)
            merged = any(ops[p].kind in ("merge", "weighted sum") for p in op.parents)
            memo[key] = _kind(op, seen_softmax, seen_product, masked, merged)
        raw = memo[key]
        seen_softmax |= raw == "softmax"
        seen_product |= raw == "weighted sum"
        # a spec may rename by variable any step but the structure read off the call; a "head split" that only
        # arranges an input itself (rope's pairs, a sink logit per head: no projection made it) is its own step
        # (an index counts as arranging: the keys read through the table are the cache's, arranged)
        arranged.append(raw == "head split" and all(arranged[p] or ops[p].index for p in op.parents))
        renamable = raw not in STRUCTURE or arranged[-1] or op.index or over_calls  # an index: no head split
        op.kind = (names or {}).get(var, raw) if renamable else raw
        # an index that only lays out an input or another index (`lengths[:, None]`) makes no number of its own
        op.aux = boolish[-1] or op.index and op.name in LAYOUT and (
            not op.parents or len(op.parents) == 1 and ops[op.parents[0]].out.numel() == op.out.numel())
        op.var = var
        op.label = _said(op.kind, var)


def _kind(op: Op, seen_softmax: bool, seen_product: bool, masked: bool, merged: bool) -> str:
    """What the call does. `merged`: it reads the heads merged (or the weighted sum): a linear there is the output
    projection; after the attention, a linear that reads anything else is a projection of its own (a
    feed-forward's, the next attention's queries)."""
    n = op.name
    if n in LINEAR:
        return "output projection" if merged else "projection"
    if n in SCORES:
        return "weighted sum" if seen_softmax else "scores"
    if n in SOFTMAX:
        return "softmax"
    if n in REPEAT and not seen_softmax and not op.boolean:  # GQA: each kv head repeated for its query heads
        return "kv repeat"
    if n in LAYOUT:
        return "merge" if seen_product else ("head split" if not seen_softmax else "step")
    if n in SCALING and not seen_softmax and not masked:
        return "scale"
    if n in FILLS or n in MASKING and masked:
        return "mask"
    return "step"


WHAT = {"projection": "the projection", "output projection": "the output projection", "scores": "the scores",
        "weighted sum": "the weighted sum of the values", "softmax": "the softmax", "scale": "the scale",
        "mask": "the mask", "head split": "the head split", "merge": "the merge of the heads",
        "kv repeat": "the repeat of the kv heads"}


def _said(kind: str, var: str) -> str:
    """The step's label, in English: what tells steps apart (Op.label). `step_words` says it to the user."""
    what = WHAT.get(kind)
    if what is None:
        what = f"the {kind}" if kind != "step" else "the step"
    if var == "return":
        return what + " returned"
    return what + (f" (`{var}`)" if var and var not in what else "")


def step_words(kind: str, var: str, bare: bool = False) -> str:
    """The step `_said` labels, in the language in use ("the scale (`s`)"); `bare` without the article ("scale
    (`s`)", as after "the reference's"). A kind the catalogue lacks (a spec's own) is said as it is."""
    try:
        what = _say(f"step.{kind.replace(' ', '_')}")
    except KeyError:
        what = kind
    said = what if bare else _say("the", what=what)
    if var == "return":
        return _say("returned", what=said)
    english = WHAT.get(kind) or (f"the {kind}" if kind != "step" else "the step")  # as _said decides
    return _say("named", what=said, var=var) if var and var not in english else said


def assigned(source: str) -> dict[int, str]:
    """line -> the name(s) its statement assigns ("q", "q, k, v", "return" for a return statement)."""
    out: dict[int, str] = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)):
            if isinstance(node, ast.Return):
                name = "return"
            else:
                tgts = node.targets if isinstance(node, ast.Assign) else [node.target]
                name = ", ".join(ast.unparse(t).strip("()") for t in tgts).replace("self.", "")
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                out.setdefault(line, name)
    return out


def discarded(source: str) -> set[int]:
    """The lines of every statement that is a bare expression: what a call there returns is thrown away (a
    `scores.masked_fill(...)` never assigned)."""
    out: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant):
            out.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return out


def constructor_lines(source: str) -> set[int]:
    """The lines of every __init__ in the source."""
    out: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            out.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return out


# --- aligning: does a user tensor hold a reference tensor's numbers? --------------------------------------

HIDDEN = -1e4  # a score this low gets exactly 0 weight in float64: -1e9, finfo.min and -inf all hide a key


def distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """Relative L2 distance of two same-shape tensors; -inf and inf count where both have them, and any score low
    enough to hide a key counts as -inf."""
    a = a.masked_fill(a <= HIDDEN, float("-inf"))
    b = b.masked_fill(b <= HIDDEN, float("-inf"))
    both = torch.isinf(a) & torch.isinf(b) & (torch.sign(a) == torch.sign(b))
    if bool((torch.isnan(a) | torch.isnan(b)).any()) or bool((torch.isinf(a) ^ torch.isinf(b)).any()):
        return float("inf")
    a, b = a.masked_fill(both, 0.0), b.masked_fill(both, 0.0)
    return float((a - b).norm() / b.norm().clamp_min(1e-12))


def layouts(u: torch.Tensor, shape: torch.Size):
    """u seen in `shape`: as it is, with its axes permuted, reshaped in order; (view, how it was laid out: None
    as it is, else the key of its words and u's shape, worded by `explain` for the one it reports)."""
    if u.shape == shape:
        yield u, None
    if u.dim() == len(shape) and u.dim() <= 5 and sorted(u.shape) == sorted(shape):
        for perm in itertools.permutations(range(u.dim())):
            if perm != tuple(range(u.dim())) and tuple(u.shape[p] for p in perm) == tuple(shape):
                yield u.permute(perm), ("laid_out", tuple(u.shape))
    if u.numel() == shape.numel() and u.shape != shape:
        yield u.reshape(shape), ("shaped", tuple(u.shape))
    if u.dim() == len(shape) and u.numel() == 2 * shape.numel():  # one half of u (`cat((freqs, freqs), -1)`,
        for a in range(u.dim()):  # `x * cos` over the whole head where the model answer turns each half)
            if u.shape[a] == 2 * shape[a] and all(u.shape[b] == shape[b] for b in range(u.dim()) if b != a):
                yield u.narrow(a, 0, shape[a]), ("half_first", tuple(u.shape))
                yield u.narrow(a, shape[a], shape[a]), ("half_second", tuple(u.shape))


def signature(t: torch.Tensor) -> torch.Tensor:
    """Its values sorted (hidden scores, NaN and inf as fixed stand-ins): equal for two tensors that hold the same
    numbers in any layout."""
    flat = t.flatten()
    flat = flat.masked_fill(flat <= HIDDEN, -1e6).nan_to_num(nan=1e7, posinf=1e8)
    return flat.sort().values


def reproduces(u: torch.Tensor, r: torch.Tensor) -> bool:
    return any(distance(v, r) <= SAME for v, _ in layouts(u, r.shape))


def parts(r: torch.Tensor, numels) -> list[torch.Tensor]:
    """The pieces of r that code computing only a prefix makes: r itself, and its first n entries along one axis
    (a sequence's first lengths[b] positions, the scores of its tokens). Only pieces of sizes in `numels` (the
    user's) and of two entries or more."""
    out = [r] if r.numel() in numels else []
    for axis in range(r.dim()):
        size = r.size(axis)
        for n in range(2 if r.numel() == size else 1, size):
            if n * (r.numel() // size) in numels:
                out.append(r.narrow(axis, 0, n))
    return out


def pieces(r: torch.Tensor, numels, batch: int, only: int | None = None) -> list[list[torch.Tensor]]:
    """For a spec whose sequences have lengths of their own (paged attention), where the user may loop over them:
    the pieces of r each sequence's part may be, by sequence when r has a batch axis (its first axis has the
    output's batch size; `only`: that sequence's alone), else as one group (the positions every sequence shares)."""
    if r.dim() >= 2 and r.size(0) == batch:
        return [parts(r[b], numels) for b in range(min(batch, 16)) if only is None or b == only]
    return [parts(r, numels)]


def each_sequence(r: torch.Tensor, numels, find, user: list[Op], batch: int, like) -> int | None:
    """The user op that reproduces sequence 0's part of r, when every sequence's part is reproduced by one (a part
    that proves nothing alone, as the positions of a sequence of length 1, by a user tensor that equals it): one
    sequence read right says nothing of the others."""
    first = None
    for group in pieces(r, numels, batch):
        hit = None
        for piece in group:
            if informative(piece):
                hit = find(piece)
            else:
                hit = next((j for j, u in enumerate(user) if u.out.numel() == piece.numel() and like(u)
                            and bool(torch.equal(u.out.flatten(), piece.flatten()))), None)
            if hit is not None:
                break
        if hit is None:
            return None
        first = hit if first is None else first
    return first


def reproduced(ref: list[Op], user: list[Op], per_sequence: bool = False) -> list[int | None]:
    """For each reference op, the index of a user op that reproduces it (the whole tensor, or one head of it when
    the user loops over heads, or with `per_sequence` one sequence's part: parts()), or None. The user's tensors
    of each size are screened at once by their sorted values, so few layouts are tried."""
    groups: dict[int, tuple[list[int], torch.Tensor]] = {}
    for j, u in enumerate(user):
        groups.setdefault(u.out.numel(), ([], []))
        groups[u.out.numel()][0].append(j)
        groups[u.out.numel()][1].append(signature(u.out))
    groups = {n: (js, torch.stack(sigs)) for n, (js, sigs) in groups.items()}
    batch = batch_of(ref)
    runs = collections.Counter((u.line, u.name) for u in user)  # how many times each line's call ran (a loop)

    def find(r: torch.Tensor, like) -> int | None:
        js, sigs = groups.get(r.numel(), ((), None))
        if not js:
            return None
        sig = signature(r)
        close = ((sigs - sig).norm(dim=1) <= SAME * sig.norm().clamp_min(1e-12)).nonzero().flatten().tolist()
        return next((js[k] for k in close if like(user[js[k]]) and reproduces(user[js[k]].out, r)), None)

    out = []
    for op in ref:
        def like(u: Op, op=op) -> bool:
            """An index stands for an index, a float for a float (a max's indices are no positions)."""
            return u.index == op.index

        r = op.out
        hit = find(r, like) if informative(r) else None
        if hit is None and informative(r) and r.dim() >= 3:  # one head of r (B, H, ...): a loop over heads
            hit = next((h for h in (find(r[:, k], like) for k in range(min(r.size(1), 16))) if h is not None), None)
        if hit is None and informative(r) and r.dim() >= 4:  # one (batch, head)'s matrix: a loop over both, its
            flat = r.reshape(-1, *r.shape[-2:])  # line run once for each
            hit = next((h for h in (find(flat[k], lambda u: like(u) and runs[(u.line, u.name)] == flat.size(0))
                                    for k in range(min(flat.size(0), 16))) if h is not None), None)
        if hit is None and informative(r):  # one half of a tensor twice its size (RoPE's halves, turned at once)
            js = groups.get(2 * r.numel(), ((), None))[0]
            hit = next((j for j in js if like(user[j]) and reproduces(user[j].out, r)), None)
        if hit is None and per_sequence and informative(r):
            hit = each_sequence(r, groups, lambda piece: find(piece, like), user, batch, like)
        out.append(hit)
    return out


def informative(t: torch.Tensor) -> bool:
    """A tensor whose every entry is the same (the zeros a loop starts from, a factor of 0) proves nothing when a
    user tensor matches it."""
    flat = t.flatten()
    return flat.numel() >= 2 and not bool((flat == flat[0]).all())


def departure(ref: list[Op], user: list[Op], bool_steps: bool = False, thrown: set[int] = frozenset(),
              per_sequence: bool = False, numbers: Assignments | None = None) -> Departure | None:
    """The first reference step the user's code gets wrong while it gets right every step it is computed from.
    `thrown`: the user's lines whose result is thrown away (discarded()); `per_sequence`: see parts();
    `numbers`: the Python floats the user's lines made (a wrong factor's line)."""
    if not ref:
        return None
    hits = reproduced(ref, user, per_sequence)
    vouched = [h is not None for h in hits]
    for i in reversed(range(len(ref))):  # a step computed from this one is reproduced: this one is right too
        vouched[i] = vouched[i] or any(vouched[c] and ref[c].name not in LOSSY for c in children(ref, i))
    # a tensor of one repeated value (the zeros a loop starts from) cannot be told apart, nor can a boolean helper
    # be held to the user's (they build masks their own way): neither is ever the departure, nor vouches for others
    right = [v or (r.aux and not bool_steps) or not informative(r.out) or inner(ref, i) for i, (v, r)
             in enumerate(zip(vouched, ref))]
    first, others, loose = None, 0, False

    def adrift(i: int) -> bool:
        """Step i is made from data steps of the model answer none of which the user's code makes (only vouched
        for; a step made from constants alone is judged by its result, and made another way: inner())."""
        return bool(ref[i].parents) and all(hits[p] is None and not ref[p].free for p in ref[i].parents)
    never_repeats = not any((u.name in REPEAT or u.name == "expand") and not u.index and not u.boolean
                            for u in user)  # the user's code repeats no numbers (an index or a mask expanded is none)
    for i, r in enumerate(ref):
        if right[i]:
            continue
        if all(right[p] for p in r.parents):
            gone = explain(ref, i, user, hits, thrown, per_sequence=per_sequence, numbers=numbers)
            if gone.relation == "absent" or gone.line is None:  # on the way to a result returned unfinished?
                gone = left_out_of_result(ref, i, user, hits, numbers) or gone
            if negated_term(ref, i, user, gone):
                right[i] = True  # a term kept with the other sign (`+ alibi` for `- penalty`): the sum says
                hits[i] = gone.op  # (which is then made from it)
                continue
            read = gone.op is not None and user[gone.op].name in LAYOUT | GATHER  # the user's read of an input
            if gone.relation == "absent" and r.index or r.name in LAYOUT and not r.parents and \
                    (gone.relation == "absent" or gone.relation == "differs" and not read) or \
                    r.name in REPEAT and never_repeats and gone.relation in ("absent", "differs"):
                # an index the user never made (a slice does its work), an input only laid out (`k.transpose(-2,
                # -1)` where an einsum reads k as it is; as many numbers made otherwise say nothing of it), kv heads
                # never repeated (the queries grouped instead): what reads it says whether it went wrong; a copy in
                # another order, or other entries read (`x[..., 0::2]` for `x[..., :half]`), is a departure
                right[i] = True
                continue
            if r.index and gone.op is not None and shifted_back(user, gone.op, r.out):
                right[i] = True  # positions counted from elsewhere, the shift added back where they are compared
                continue
            if first is None:
                first = gone
                loose = adrift(i)
            elif gone.op is not None and first.op is not None and first.op in descendants(user, {gone.op}) or \
                    loose and not adrift(i):
                # another step on a branch of its own departs too, and the first one's tensor was made from this
                # one's (the model answer makes the values before the scores; absorbed MLA makes no values, and
                # its output comes from scaled scores), or the first step's inputs are nowhere in the user's
                # code (absorbed MLA's values: any tensor of as many numbers stood for them): the numbers went
                # wrong here first
                first = gone
                loose = False
            others += 1
            if others > BRANCHES:
                break
    return first


def negated_term(ref: list[Op], i: int, user: list[Op], gone: Departure) -> bool:
    """Step i is a term the model answer adds or subtracts (every step that reads it is a sum or a difference), and
    the user's tensor for it is the same numbers times -1: a sign convention (ALiBi's bias kept negative and
    added), which the sum or difference made from it judges."""
    kids = children(ref, i)
    if gone.relation != "factor" or gone.op is None or not kids or any(ref[c].name not in TERMS for c in kids):
        return False
    c = _factor_of(user[gone.op].out, ref[i].out)
    return c is not None and abs(c + 1) <= 1e-6


def shifted_back(user: list[Op], j: int, want: torch.Tensor) -> bool:
    """user[j], positions `want` shifted by a constant c, is compared later with c added back (`(kj - qi) < Tk -
    Tq` for the model answer's `kj <= qi + Tk - Tq`): the positions are right as the code uses them."""
    u = user[j].out
    if u.shape != want.shape or not u.numel():
        return False
    gap = (want - u).flatten()
    if not bool((gap == gap[0]).all()) or float(gap[0]) == 0:
        return False
    c = abs(int(gap[0]))
    return any(user[k].name in COMPARE and c in user[k].ints for k in descendants(user, {j}))


def inner(ref: list[Op], i: int) -> bool:
    """A number on the way to a step made from constants alone, which a later call of that step computes with
    (`arange(0, d, 2)` and `-2i/d` for the frequencies `base ** (-2i/d)`): code may take another way there
    (`arange(d/2)`, then `* 2`), so the step is judged by its result, on the line that finishes it."""
    r = ref[i]
    return r.free and not r.boolean and any(ref[c].free and not ref[c].boolean and ref[c].kind == r.kind
                                            and ref[c].name not in KEEPS for c in children(ref, i))



# a max or a comparison comes out the same from many inputs (a row max is blind to its hidden scores being 0
# rather than -inf): that it is reproduced says nothing of the step it was computed from
COMPARE = {"__gt__", "__ge__", "__lt__", "__le__", "gt", "ge", "lt", "le"}
LOSSY = {"amax", "max", "amin", "min", "argmax", "argmin", "maximum", "minimum", "any", "all", "logsumexp",
         "__eq__", "__ne__", "eq", "ne", "isinf", "isnan", "isfinite", "sign"} | COMPARE


def children(ref: list[Op], i: int) -> list[int]:
    return [j for j in range(i + 1, len(ref)) if i in ref[j].parents]


def explain(ref: list[Op], i: int, user: list[Op], hits: list[int | None], thrown: set[int] = frozenset(),
            shortlist: int = 6, per_sequence: bool = False, numbers: Assignments | None = None) -> Departure:
    """The departure at reference step i, said with the user's tensor that stands for it: among those made from the
    user's tensors that reproduce the step's inputs (else any made after them), one whose difference has a name
    (a factor, -inf kept finite, ...), else the nearest. Only a short list of the nearest is described."""
    r = ref[i]
    sources = {hits[p] for p in r.parents if hits[p] is not None}
    after = max(sources, default=-1)
    fed = descendants(user, sources)
    taken = {h for h in hits if h is not None}  # tensors of the user's that are already another step
    made = {j for j, u in enumerate(user) if u.name in SOFTMAX}
    normalised = made | descendants(user, made)  # probabilities, or made from them: no score is left at -inf there
    near_ones = []
    passes, seen = [], {}  # by user op: how many times its line's call ran before (a loop over sequences: b)
    for u in user:
        passes.append(seen.get((u.line, u.name), 0))
        seen[(u.line, u.name)] = passes[-1] + 1
    batch = batch_of(ref)
    for j, u in enumerate(user):
        skipped = j in sources  # the step left out: the tensor it starts from stands for it
        if not skipped and (j <= after or j in taken and not r.index):  # an index may equal another (t % n, t)
            continue
        if r.free and not u.free:  # a step made from constants alone (the frequencies) is never one made from data
            continue
        if u.name in BUFFERS:  # a buffer a loop fills in later (`out = q.new_zeros(...)`): as made, it holds nothing
            continue
        if r.index != u.index or r.index and not skipped and j not in fed and sources:
            continue  # an index stands for an index, made from the step's inputs (or, as they are, from constants)
        if u.out.numel() in (r.out.numel(), 2 * r.out.numel()):  # (or one half of it: layouts())
            wants = [r]
        elif per_sequence and not skipped:  # its sequence's part of the step (the loop's pass it was made in)
            wants = [replace(r, out=piece) for group in pieces(r.out, {u.out.numel()}, batch, only=passes[j])
                     for piece in group]
        elif r.out.dim() >= 3 and u.out.numel() * r.out.size(1) == r.out.numel() and \
                seen[(u.line, u.name)] % r.out.size(1) == 0:  # one head's part: a loop over the heads (a helper
            # called n times a head: its pass // n)
            wants = [replace(r, out=r.out[:, passes[j] // (seen[(u.line, u.name)] // r.out.size(1))])]
        elif r.out.dim() >= 4 and u.out.numel() == r.out.shape[-2:].numel() and \
                seen[(u.line, u.name)] % (r.out.numel() // u.out.numel()) == 0:  # one (batch, head)'s matrix
            flat = r.out.reshape(-1, *r.out.shape[-2:])
            wants = [replace(r, out=flat[passes[j] // (seen[(u.line, u.name)] // flat.size(0))])]
        else:
            continue
        for want in wants:
            for view, laid in layouts(u.out, want.out.shape):
                d = near(view, want.out)
                if per_sequence and d <= SAME and not skipped:  # its sequence's part, right: not where it goes wrong
                    continue
                # a loop over sequences: the first tensor in the order the code ran that stands for the step and
                # differs is where it went wrong (a later one only carries it on); one value repeated (`m - m_new`
                # on a first pass, all -inf) stands for nothing
                order = (not informative(u.out), j) if per_sequence else d
                near_ones.append(((j not in fed and not skipped, order), j, view, laid, skipped, want))
    near_ones.sort(key=lambda c: c[0])
    # two terms combined (`scores - bias`): the first tensor made from both (each source's descendants, met)
    meet = min(set.intersection(*(descendants(user, {s}) for s in sources)), default=None) \
        if r.name in TERMS and len(sources) > 1 else None
    listed = near_ones[:shortlist] + [c for c in near_ones[shortlist:] if c[4]]
    best, best_key = None, None
    # where the model answer masks after this step, a tensor the code made by applying its mask is a later step:
    # it stands for this one only as the same numbers a factor off (a scale left out, the scores masked since)
    later = set()
    if r.kind != "mask" and any(ref[c].kind == "mask" for c in descendants(ref, {i})):
        fills = {k for k in fed if user[k].name in FILLS and any(_two_valued(user[p]) for p in user[k].parents)}
        later = fills | descendants(user, fills)
    for (unfed, d), j, view, laid, skipped, want in listed:
        if r.index:  # block ids, positions: their values say it, a factor or an arrangement of them nothing
            code, how, params = "differs", _index_differs(view, want.out), {}
        else:
            code, how, params = relation(view, want, ref, i)
        if r.kind in BEFORE_SOFTMAX and j in normalised and code in MASK_RELATIONS:
            code, how, params = "differs", _differs(view, want.out), {}  # a probability's 0 is no score left at -inf
        # two terms combined: the first tensor made from both stands for the step, however it differs (`scores +
        # bias` for `scores - bias`), not one of the terms as it is
        whole = j == meet and user[j].name in TERMS
        beyond = j in later and not skipped and code != "factor"
        # an input only read (`q[:, h]`) stands for a step that computes only when its numbers are that step's
        read = user[j].name in LAYOUT | GATHER and not user[j].parents and r.name not in LAYOUT | GATHER and \
            code == "differs"
        # (then the same call as the step's first)
        key = (unfed, beyond, read, code == "differs" and not whole, user[j].name != r.name, skipped, d)
        if best_key is None or key < best_key:
            best, best_key = (j, code, how, laid, params, skipped, want), key
    if best is None:
        # the user's next tensor after the step's inputs; with no input of it reproduced, no line is the step's. An
        # input the model answer makes on the step's own line (`p * (dp - (dp * p).sum(...))`) is the statement
        # the step belonged in: that input's line
        twin = run_elsewhere(ref, i, user, hits, taken)
        if twin is not None:  # the step's own line, in a helper, run from another call on other numbers
            return _called_on_other(r, *twin)
        beside = [hits[p] for p in r.parents if hits[p] is not None and ref[p].line == r.line]
        line = user[beside[0]].line if beside else next((u.line for u in user[after + 1:]), None) if sources else None
        return Departure(r.label, r.kind, line, _say("absent", n=r.out.numel(), shape=tuple(r.out.shape)), "absent")
    j, code, how, laid, params, skipped, want = best
    if laid and code != "arranged":
        how = _say("laid", how=how, laid=_say(laid[0], shape=laid[1]))
    # a step left out is stood for by the tensor it starts from, which is right: its line is where the step belonged
    # only when the model answer computes both on one line (a scale dropped from `s = q @ k^T * scale`)
    beside = any(hits[p] == j and ref[p].line == r.line for p in r.parents)
    line = user[j].line if not skipped or beside else None
    handed = handed_on(user, j, numbers) if code == "other-step" and not children(ref, i) and (
        skipped or made_by(user, j) in sources) else None
    if handed is not None:  # the model answer's result (no step reads it) left out: the user's code returns its
        # input as it is (or laid out), so the step belonged where the code hands its result on (`out = num`,
        # `return num`)
        return _handed_at(r, handed, how, code, params)
    if line is None and code == "other-step":  # the step's input stands for it: thrown away, or not read (a softmax)?
        if user[j].line in thrown and not any(j in u.parents for u in user):  # j: the input step, made right
            step = step_words(ref[next(p for p in r.parents if hits[p] == j)].kind, "", bare=True)
            return Departure(r.label, r.kind, user[j].line, _say("thrown", line=user[j].line, step=step), code,
                             params, line_in_how=True)
        line = next((u.line for u in user[after + 1:] if _same_call(u, r)), None)
        reduced = _reduced_otherwise(user, r, j, taken) if line is None else None
        if reduced is not None:  # the step made, but over another extent: a running sum taken as a whole one
            c = user[reduced]
            return Departure(r.label, r.kind, c.line, _say("reduced", shape=tuple(c.out.shape),
                                                           want=tuple(r.out.shape)), "reduced")
        # no tensor made from the step's inputs stands for it: the step is left out, and belongs right after the
        # line that makes its input
        counterpart = any(not c[4] and not c[0][0] for c in near_ones)  # (fed, not the input itself)
        twin = run_elsewhere(ref, i, user, hits, taken) if line is None and reduced is None else None
        if twin is not None:  # not left out: made by a helper line that ran, from another call, on other numbers
            return _called_on_other(r, *twin)
        if line is None and reduced is None and not counterpart and _left_out(user, r, j, taken):
            return Departure(r.label, r.kind, user[j].line, _say("left_out_after", how=how, line=user[j].line),
                             code, params, line_in_how=True)
    if code in WRONG_MASK and line is not None:
        line = mask_origin(user, j, want.out)
    elif code == "factor" and line is not None:
        k = factor_origin(user, j, want)
        line = user[k].line
        # the ops that keep the factor, and a scaling of j by one (`* scale` where the scale came out 1.0)
        chain = sorted(({k} | descendants(user, {k})) & (ancestors(user, {j}) | {j})) + [
            c for c, u in enumerate(user)
            if u.parents == (j,) and u.name in SCALING and torch.equal(u.out, user[j].out)]
        # or an input scaled on the way to the step (`q / self.temperature` before the product)
        inputs = [c for c in sorted(ancestors(user, {j}) & descendants(user, sources)) if user[c].name in SCALING]
        ops = chain + [c for c in inputs if c not in chain]
        whole = int_origin(user, ops, numbers, _factor_of(user[j].out, want.out))
        if whole is not None and whole[0] != line:  # the factor is right for another whole number than the code's
            at, n, m = whole
            return Departure(r.label, r.kind, at, _say("int_from", how=how, line=at, n=n, m=m), code, params,
                             line_in_how=True, step_line=line, op=j)
        made = number_origin(user, ops, numbers)
        if made is not None and made[0] != line:  # the factor is a Python number the call was given: its line
            return _made_at(r, made[0], "factor_from" if made[1] else "numbers_from", how, code, params, line, op=j)
    elif code in MADE_ELSEWHERE and line is not None and not r.index:
        shapes = {tuple(user[p].out.shape) for p in sources} if sources else \
            {tuple(o.out.shape) for o in ref if not o.parents}  # the inputs': the steps made straight from them
        own = made_by(user, j)
        made = number_origin(user, [own], numbers) if user[own].free and not user[own].parents else None
        if made is not None and made[0] != user[own].line:  # made from Python numbers alone (torch.tensor(slopes))
            return _made_at(r, made[0], "numbers_from", how, code, params, user[own].line, op=j)
        index = read_through(user, own, taken, sources)
        if index is not None and user[index].line != user[own].line:  # the right input read at the wrong places
            return _made_at(r, user[index].line, "index_from", how, code, params, user[own].line, op=j)
        first = went_wrong(user, own, sources, taken, shapes)
        at = called_at(user, first, taken) or user[first].line
        if at != user[own].line:  # said as such: that line does not make the step's tensor itself
            return _made_at(r, at, "made_from", how, code, params, user[own].line, op=j)
        line = user[own].line
    elif code in MADE_ELSEWHERE and line is not None:
        line = user[made_by(user, j)].line
    elif code == "arranged" and line is not None:
        by = arranged_by(user, j, sources, taken, [ref[p].out for p in r.parents])
        if user[by].line != line:  # said as such: that line put the numbers in order, another made the step's
            return _made_at(r, user[by].line, "arranged_at", how, code, params, line, op=j)
    return Departure(r.label, r.kind, line, how, code, params, op=j)


def _made_at(r: Op, line: int, key: str, how: str, code: str, params: dict, step_line: int | None,
             op: int | None = None) -> Departure:
    """The departure at step r placed at `line`, an earlier line than the step's own (`step_line`) where its wrong
    numbers were made, said as such (`key`'s words name that line after what differs)."""
    return Departure(r.label, r.kind, line, _say(key, how=how, line=line), code, params, line_in_how=True,
                     step_line=step_line, op=op)


def left_out_of_result(ref: list[Op], i: int, user: list[Op], hits: list[int | None],
                       numbers: Assignments | None) -> Departure | None:
    """Step i, which the user's code never makes (or does not make where it can be placed), is on the way to a
    result of the model answer (a step no other reads: `num / (den + eps)`, i the normaliser's sum), or is that
    result, and the code returns one of the result's inputs as it is (`return num`; `return ffn(h)` where the
    model answer returns h + ffn(h)): the result's step is what is left out, where the code hands that input on.
    None otherwise."""
    for f in range(i, len(ref)):  # i itself, when it is the result: which of its inputs does the code return?
        if children(ref, f) or f != i and i not in ancestors(ref, {f}):
            continue
        for p in ref[f].parents:
            if hits[p] is None or not (handed := handed_on(user, hits[p], numbers)):
                continue
            view = next((v for v, _ in layouts(user[hits[p]].out, ref[f].out.shape)), None)
            code, how, params = relation(view, ref[f], ref, f) if view is not None else ("", "", {})
            if code == "other-step":
                return _handed_at(ref[f], handed, how, code, params)
    return None


def _handed_at(r: Op, line: int, how: str, code: str, params: dict) -> Departure:
    """The departure at step r, a result left out, placed where the user's code hands its input on (`line`)."""
    return Departure(r.label, r.kind, line, _say("left_out_returned", how=how, line=line), code, params,
                     line_in_how=True)


def handed_on(user: list[Op], j: int, numbers: Assignments | None) -> int | None:
    """The line where the user's code hands user[j] to its caller as it is (or only laid out: `out.reshape(B, H, T,
    dv)`): the last line, but those that made it, that bound it to a name (`out = num`), else the return statement
    (`return num`); None when what the code returns is something else."""
    if numbers is None or numbers.returned is None:
        return None
    ids = numbers.returned_ids()
    k = next((c for c in reversed(range(len(user))) if user[c].ident in ids), None)
    chain = [k] if k is not None else []
    while chain and user[chain[-1]].name in LAYOUT and len(user[chain[-1]].parents) == 1:
        chain.append(user[chain[-1]].parents[0])
    if j not in chain:
        return None
    own = {user[c].line for c in chain}
    made = {user[c].ident: c for c in chain}
    names = [line for line, i, before in numbers.bound if i in made and before > made[i] and line not in own]
    return names[-1] if names else numbers.returned[0]


def number_origin(user: list[Op], ops: list[int], numbers: Assignments | None) -> tuple[int, bool] | None:
    """(the line that made a Python number the given ops were called with, whether it is one number rather than a
    list of them): the first found, in the ops' order; None when none was made on a line the tracer watched."""
    for c in ops:
        for x in user[c].numbers:
            at = numbers.origin(x, c) if numbers is not None else None
            if at is not None:
                return at, type(x) is float
    return None


def int_origin(user: list[Op], ops: list[int], numbers: Assignments | None,
               c: float | None) -> tuple[int, int, int] | None:
    """(the line, n, m) where a scale off by the factor c comes from a wrong whole number: the ops scale by n ** -0.5
    or sqrt(n) (`d = v.shape[-1]` then `d ** -0.5`; `norm = d ** (1 // 2)`, which is 1), and m = n * c**2 (or n /
    c**2), which would give the reference's, is another whole number. The number n must be given to no other torch
    call (a model width right for its reshapes, used for the scale, makes the scale's line the wrong one; a 1 is
    never right for a scale), and made on one line only. None when there is no such number."""
    if numbers is None or c is None:
        return None
    elsewhere = {x for k, u in enumerate(user) if k not in ops for x in u.ints}
    for k in ops:
        given = [x for x in user[k].numbers if type(x) is float] + \
            [x for x in user[k].ints if user[k].name in SCALING]
        divides = user[k].name in DIVIDES
        whole = numbers.ints(k)
        for x in given:
            if not (0 < x < float("inf")):
                continue
            # made before x was (when a line made it): a whole number made later is none of its sources
            before = numbers.place(x, k)
            for place, made in reversed(whole):
                n = made.value
                e = next((e for e in (0.5, -0.5) if n >= 1 and abs(x - n ** e) <= 1e-9 * x), None)
                if e is None or n > 1 and n in elsewhere or before is not None and place > before:
                    continue
                if n > 1 and len({m.line for _, m in whole if m.value == n}) > 1:
                    continue  # another line made the same number too (`B, T, _ = x.shape` and self.d_model): which?
                m = n * c * c if divides == (e == 0.5) else n / (c * c)  # (n / m) ** e is c
                if abs(m - round(m)) <= 1e-6 * m and round(m) >= 1 and round(m) != n:
                    return made.line, n, round(m)
    return None


DIVIDES = {"__truediv__", "div", "true_divide", "div_", "__itruediv__"}


def _factor_of(u: torch.Tensor, want: torch.Tensor) -> float | None:
    """u's factor off want, in the first layout of u as want's shape that has one."""
    return next((f for f in (_factor(view, want) for view, _ in layouts(u, want.shape)) if f is not None), None)


BUFFERS = {"zeros", "ones", "full", "empty", "new_zeros", "new_ones", "new_full", "new_empty", "zeros_like",
           "ones_like", "full_like", "empty_like"}
GATHER = {"__getitem__", "index_select", "gather", "take", "take_along_dim"}


def arranged_by(user: list[Op], j: int, sources: set[int], taken: set[int], inputs: list[torch.Tensor]) -> int:
    """The op that put user[j]'s right numbers in their wrong order: where they were read through an integer index
    the code computed (`k[:, :, arange(H) % Hkv]`), the op that made the index; else the first view on the way
    from the step's inputs (`sources`, the reference's `inputs`) that holds an input's numbers but in no layout of
    it (a transpose before a reshape that merges the wrong axes; a piece, one head unbound, says nothing); else j."""
    k = made_by(user, j)
    index = read_through(user, k, taken)
    if index is not None:
        return index
    between = sorted(ancestors(user, {j}) & descendants(user, sources))
    return next((p for p in between if user[p].name in LAYOUT and user[p].out.numel() in {x.numel() for x in inputs}
                 and not any(reproduces(user[p].out, x) for x in inputs)), j)


def read_through(user: list[Op], k: int, taken: set[int], sources: set[int] | None = None) -> int | None:
    """The op that made the one integer index user[k] reads its numbers through (`x[..., 2 * i]`, `k[:, :, h % n]`),
    when user[k] is such a read and the index is no step the reference makes right (`taken`: a block id read off
    the table is right, whatever the offset beside it); with `sources`, only when what it reads is right (a step's
    input it reproduces, or the case's own input): then the index is what went wrong. None otherwise."""
    indices = [p for p in user[k].parents if user[p].index]
    data = [p for p in user[k].parents if not user[p].index]
    if user[k].name not in GATHER or len(indices) != 1 or sources is not None and any(p not in sources for p in data):
        return None
    index = made_by(user, indices[0])  # one number (a token's block, read in a loop) orders nothing
    return None if index in taken or indices[0] in taken or user[indices[0]].out.numel() < 2 else index


def went_wrong(user: list[Op], j: int, sources: set[int], taken: set[int], shapes: set) -> int:
    """The first of user[j]'s ancestors, in the order the code ran, that is a changed copy of the step's input (the
    input centred before a norm): made from the step's inputs (sources; none: the step reads the case's inputs),
    shaped as one of them (`shapes`), reproducing no step of the reference and feeding none that is reproduced
    (a tensor the model answer never makes on the way to one it does is only another way to the right numbers).
    There the numbers went wrong, and user[j] only carries it on; j itself when there is none."""
    fed = descendants(user, sources) if sources else set(range(len(user)))
    feeds_right = ancestors(user, taken)  # every op a reproduced one was computed from
    # a line that computes right elsewhere (a helper called twice) is not where it went wrong, its call is: an op
    # there stands for its call (called_at), with no sources of its own in the helper (`rope(q)` where only k's
    # part of q should be turned: the helper's cat, not its halves)
    right_calls = {(user[k].line, user[k].name) for k in taken}
    laid = [sorted(x) for x in shapes]  # an input's shape in any order of its axes (the heads moved first or not)
    seen, stack, wrong = set(), [j], []
    while stack:
        k = stack.pop()
        for p in user[k].parents:
            if p in seen or p in taken or p in sources or p not in fed or user[p].free or p in feeds_right:
                continue
            if (user[p].line, user[p].name) in right_calls:
                seen.add(p)
                if sorted(user[p].out.shape) in laid and user[p].sites:
                    wrong.append(p)
                continue
            seen.add(p)
            stack.append(p)
            if sorted(user[p].out.shape) in laid and made_by(user, p) == p:  # (a view of numbers made before: no)
                wrong.append(p)
    return min(wrong, default=j)


WRONG_MASK = {"hides", "shows", "hides-and-shows", "moved"}  # the mask's pattern is wrong, not how it is applied
MADE_ELSEWHERE = {"differs", "nan"}  # wrong numbers, which a view only carries on (not another step's)


REDUCING = {"sum", "cumsum", "mean", "cumprod", "prod", "logsumexp", "amax", "max"}


def run_elsewhere(ref: list[Op], i: int, user: list[Op], hits: list[int | None],
                  taken: set[int]) -> tuple[int, int] | None:
    """(the call's line, the helper's line) where reference step i, which no user tensor holds, is made by the model
    answer's same line for another call (RoPE's halves, of k_pe and of q_pe) that the user's helper line reproduces,
    and that helper line also runs, from another call, on numbers that are no step (`rotary(q_nope)` where q_pe
    is meant): that call is where the step went to other numbers. None otherwise."""
    for o, other in enumerate(ref):
        if o == i or other.line != ref[i].line or other.name != ref[i].name or hits[o] is None:
            continue
        mine = user[hits[o]]
        k = next((k for k, u in enumerate(user) if k not in taken and u.line == mine.line and u.name == mine.name
                  and u.sites and u.out.dim() == ref[i].out.dim()), None)
        at = called_at(user, k, taken) if k is not None else None
        if at is not None:
            return at, mine.line
    return None


def _called_on_other(r: Op, at: int, inner: int) -> Departure:
    """The departure at step r, placed at the call (`at`) that ran the helper line `inner` on other numbers."""
    return Departure(r.label, r.kind, at, _say("called_on_other", n=r.out.numel(), shape=tuple(r.out.shape),
                                               inner=inner, line=at), "called-on-other", line_in_how=True)


def called_at(user: list[Op], k: int, taken: set[int]) -> int | None:
    """The line of the call that made user[k] wrong, where user[k] is made in a helper whose same line makes a step
    right in another call (an op of the same line and name that reproduces one, `taken`): where the two calls'
    lines part, from the outermost (the same line, in a loop or a comprehension: the innermost call). None when
    user[k]'s line is no such helper line, or user[k] is itself right."""
    u = user[k]
    twins = [user[o].sites for o in sorted(taken) if user[o].line == u.line and user[o].name == u.name]
    if not twins or not u.sites or k in taken:  # (k itself reproduces a step: right, in every call)
        return None
    other = next((x for x in twins if x != u.sites), twins[0])
    mine, theirs = u.sites[::-1], other[::-1]
    return next((a for a, b in zip(mine, theirs) if a != b), u.sites[0])


def _reduced_otherwise(user: list[Op], r: Op, j: int, taken: set[int]) -> int | None:
    """A reduction the user's code makes of j (the step's input), to another shape than the reduction r (a sum over
    the whole axis where the step keeps a running one): the one op that does, else None."""
    if r.name not in REDUCING:
        return None
    made = [c for c, u in enumerate(user) if j in u.parents and u.name in REDUCING and c not in taken
            and u.out.shape != r.out.shape]
    return made[0] if len(made) == 1 else None


def _left_out(user: list[Op], r: Op, j: int, taken: set[int]) -> bool:
    """A step left out (a norm, a transform of its input: not a reduction, nor a softmax, which have their own
    account), when the user's code reads j (the step's input, standing for its result) where the result belongs:
    some op reads j and reproduces no step of the reference."""
    if r.name in REDUCING or r.name in SOFTMAX or r.index:
        return False
    return any(j in u.parents and c not in taken for c, u in enumerate(user))


def factor_origin(user: list[Op], j: int, r: Op) -> int:
    """The op that made user[j]'s factor off the reference's step r: a mask or a view applied after it keeps the
    factor (a scale left out of the scores shows as masked scores a factor off), so the first op holding it."""
    def factors(k: int) -> list[float]:
        return [f for f in (_factor(view, r.out) for view, _ in layouts(user[k].out, r.out.shape)) if f is not None]

    c = _factor_of(user[j].out, r.out)
    while c is not None:
        ups = [p for p in user[j].parents if user[p].out.numel() == r.out.numel() and any(
            abs(f - c) <= 1e-6 * abs(c) for f in factors(p))]
        if len(ups) != 1:
            break
        j = ups[0]
    return j


def _factor(u: torch.Tensor, want: torch.Tensor) -> float | None:
    """c when u is c times want where both are finite (c not 1), else None."""
    both = torch.isfinite(want) & torch.isfinite(u)
    uu, ww = u[both], want[both]
    if not ww.numel() or float(ww.norm()) == 0:
        return None
    c = float((uu * ww).sum() / (ww * ww).sum())
    sane = 1e-9 < abs(c) < 1e9  # a factor of 1e-300 is no factor: the numbers are another step's, or nothing
    return c if sane and abs(c - 1) > 1e-6 and distance(uu, c * ww) <= SAME else None


def made_by(user: list[Op], j: int) -> int:
    """The op that made user[j]'s numbers: a view or a cast that keeps every number of its source (`x[..., None]`,
    a transpose, `pos.float()`) holds numbers made where that one was."""
    while user[j].name in KEEPS and len(user[j].parents) == 1:
        p = user[j].parents[0]
        if user[p].out.numel() != user[j].out.numel() or not torch.equal(signature(user[p].out),
                                                                          signature(user[j].out)):
            break
        j = p
    return j


def _same_call(u: Op, r: Op) -> bool:
    """u is the user's softmax where the reference's step r is one (made from other scores), as many numbers."""
    return u.out.numel() == r.out.numel() and u.name in SOFTMAX and r.name in SOFTMAX


def mask_origin(user: list[Op], j: int, want: torch.Tensor) -> int | None:
    """The line that made the wrong mask user[j] applies. A mask carries its pattern, as it is or negated, through
    the ops that follow (`~keep`, a view, `.bool()`): the first op that holds the pattern made it, and is the line
    when it computed it (a tril, a comparison of positions). A mask that only copies the input's, or none, leaves
    the line where the mask is applied: that is where it went wrong, unless what it hides is `want`'s hidden
    scores on other axes (the batch's masks spread over the heads): then the view that laid the input's mask out
    for broadcasting (`mask.unsqueeze(0)`) is."""
    carriers = [p for p in user[j].parents if _two_valued(user[p])]
    if len(carriers) != 1:
        return user[j].line
    b, chain = carriers[0], [carriers[0]]
    while True:
        ups = [p for p in user[b].parents if _two_valued(user[p]) and same_pattern(user[p].out, user[b].out)]
        if len(ups) != 1:
            break
        b = ups[0]
        chain.append(b)
    if not user[b].copied:
        return user[b].line
    views = [c for c in reversed(chain) if user[c].name in LAYOUT]  # from the input's mask on
    if views and _hidden_on_other_axes(user[j].out, want):
        return user[views[0]].line
    return user[j].line


def _hidden_on_other_axes(u: torch.Tensor, want: torch.Tensor) -> bool:
    """u hides the scores `want` hides, but with two of its axes swapped (a mask of batch b applied to head b)."""
    if u.shape != want.shape:
        return False
    mine, theirs = u <= HIDDEN, want <= HIDDEN
    if torch.equal(mine, theirs):
        return False
    return any(theirs.size(a) == theirs.size(c) and torch.equal(mine, theirs.transpose(a, c))
               for a, c in itertools.combinations(range(theirs.dim()), 2))


def _two_valued(op: Op) -> bool:
    """A mask: booleans, or a tensor of two values (0 and 1, 0 and -inf; one value repeated is a fill, no mask)."""
    return op.boolean or op.out.numel() > 1 and torch.unique(op.out).numel() == 2


def same_pattern(a: torch.Tensor, b: torch.Tensor) -> bool:
    """The same positions non-zero, as they are or negated: flattened when both hold as many (a view adds an axis:
    `keep[:, None, :]`), else once broadcast."""
    if a.numel() == b.numel():
        a, b = (a != 0).reshape(-1), (b != 0).reshape(-1)
    else:
        try:
            a, b = torch.broadcast_tensors(a != 0, b != 0)
        except RuntimeError:
            return False
    return bool((a == b).all() or (a != b).all())


def descendants(ops: list[Op], roots: set[int]) -> set[int]:
    out = set(roots)
    for j, op in enumerate(ops):
        if any(p in out for p in op.parents):
            out.add(j)
    return out - roots


def ancestors(ops: list[Op], roots: set[int]) -> set[int]:
    """Every op the roots were computed from (parents come before their children)."""
    out: set[int] = set()
    for j in reversed(range(len(ops))):
        if j in roots or j in out:
            out.update(ops[j].parents)
    return out


def batch_of(ref: list[Op]) -> int:
    """The batch size B: the first axis of the reference's returned tensor (B, ...)."""
    return ref[-1].out.size(0) if ref[-1].out.dim() else 1


def near(a: torch.Tensor, b: torch.Tensor) -> float:
    """A distance that never gives up: finite entries by relative L2, plus the share of entries finite in one only."""
    both = torch.isfinite(a) & torch.isfinite(b)
    odd = float((torch.isfinite(a) != torch.isfinite(b)).double().mean()) if a.numel() else 0.0
    if not bool(both.any()):
        return 1.0 + odd
    return distance(a[both], b[both]) + odd


# what differs at the departing step, as a code (Departure.relation): with the step's kind it names the mistake
RELATIONS = ("filled", "kept-finite", "nan", "hides", "shows", "hides-and-shows", "moved", "factor", "other-step",
             "reduced", "other-rows", "arranged", "differs", "absent", "called-on-other")


def relation(u: torch.Tensor, r: Op, ref: list[Op], i: int) -> tuple[str, str, dict]:
    """What differs between the user's tensor u and the reference step r: (a code of RELATIONS, in words, the
    numbers the wording needs)."""
    code, how = _relation(u, r, ref, i)
    if code == "kept-finite":
        return filled(u, r, ref) or (code, how, {})
    return code, how, {}


def filled(u: torch.Tensor, r: Op, ref: list[Op]) -> tuple[str, str, dict] | None:
    """Where the reference hides a score, does the user's hold one value (a fill: 0, -1e4), the score plus one
    value (an additive mask of mask - 1), or the score itself (a key shown, not a fill)?"""
    hid = ~torch.isfinite(r.out)
    kept = u[hid]
    scores = next((ref[p].out for p in r.parents if ref[p].out.shape == u.shape
                   and bool(torch.isfinite(ref[p].out[hid]).all())), None)
    if scores is not None and distance(kept, scores[hid]) <= SAME:
        n = int(hid.sum())
        return "shows", _say("shows_as_they_are", n=n), {}
    if scores is not None:  # some shown as they are, the rest filled: the mask's pattern is wrong, not its fill
        shown = (kept - scores[hid]).abs() <= 1e-6 * (1 + scores[hid].abs())
        if bool(shown.any()) and not bool(shown.all()) and constant(kept[~shown]):
            said = _say("shows", missed=int(shown.sum()), hidden=int(hid.sum()))
            return "shows", _say("yours", what=said), {}
    if constant(kept):
        value = float(kept[0])
        return "filled", _say("fills", value=value), {"value": f"{value:g}"}
    if scores is not None:
        shift = kept - scores[hid]
        if constant(shift):
            c = float(shift[0])
            return "filled", _say("adds", c=c), {"value": _say("their_score", sign='+' if c >= 0 else '-',
                                                               c=abs(c))}
    return None


def constant(t: torch.Tensor) -> bool:
    """Every entry the same number, to float64 rounding."""
    return float(t.max() - t.min()) <= 1e-9 * max(1.0, float(t.abs().max()))


def _relation(u: torch.Tensor, r: Op, ref: list[Op], i: int) -> tuple[str, str]:
    want = r.out
    finite = torch.isfinite(want)
    if bool((~finite).any()) and bool(torch.isfinite(u[~finite]).all()) and distance(
            u.masked_fill(~finite, 0.0), want.masked_fill(~finite, 0.0)) <= SAME:
        vals = sorted({round(float(v), 4) for v in u[~finite].flatten()[:50]})
        shown = ", ".join(f"{v:g}" for v in vals[:3])
        return "kept-finite", _say("kept_finite", shown=shown)
    c = _factor(u, want)
    # every number finite and a factor off: a factor, however low some scores are (a stale slot's, scaled or not)
    factor_first = c is not None and bool(finite.all()) and bool(torch.isfinite(u).all())
    if not factor_first and (r.kind == "mask" or bool((want <= HIDDEN).any())):
        said = hiding(u, want)
        if said:
            return said
    if c is not None:
        return "factor", _say("factor", c=c, inverse=1 / c)
    for k, other in enumerate(ref):
        if k != i and other.label != r.label and other.out.shape == want.shape and informative(other.out) and \
                distance(u, other.out) <= SAME:
            return "other-step", _say("other_step", step=step_words(other.kind, other.var, bare=True))
    if r.kind == "softmax":
        said = normalised_over(u, r, ref)
        if said:
            return "other-rows", said
    if u.numel() and distance(u.flatten().sort().values, want.flatten().sort().values) <= SAME:
        return "arranged", _say("arranged")
    return "differs", _differs(u, want)


def _index_differs(u: torch.Tensor, want: torch.Tensor) -> str:
    """An index step's difference, as its first values (block ids, positions: a relative distance says nothing)."""
    def shown(x: torch.Tensor) -> str:
        values = [int(v) for v in x.flatten()[:8].tolist()]
        return "[" + ", ".join(map(str, values)) + (", ...]" if x.numel() > 8 else "]")

    return _say("index_differs", yours=shown(u), want=shown(want))


def _differs(u: torch.Tensor, want: torch.Tensor) -> str:
    d = (u - want).abs().nan_to_num(float("inf"))
    return _say("differs", up_to=float(d.max()), l2=distance(u, want))


def normalised_over(u: torch.Tensor, r: Op, ref: list[Op]) -> str | None:
    """u is a softmax of the reference's scores, each group of entries summing to 1, but its groups are not the
    rows of keys: a softmax over another axis, over the whole tensor, or over rows a reshape cut across the
    scores. Read off the numbers: within a group, log(u) - score is the same (minus the group's logsumexp)."""
    if abs(float(u.sum()) - 1) <= 1e-6:
        return _say("sums_whole")
    for dim in range(u.dim() - 1):
        sums = u.sum(dim)
        if distance(sums, torch.ones_like(sums)) <= SAME:
            return _say("sums_axis", dim=dim)
    scores = next((ref[p].out for p in r.parents if ref[p].out.shape == u.shape), None)
    if scores is None or r.name not in ("softmax", "_softmax"):
        return None
    shown = (u > 0) & torch.isfinite(scores)
    if int(shown.sum()) < 4 or bool(torch.isnan(u).any()):
        return None
    keys = torch.round((u[shown].log() - scores[shown]) * 1e6)  # one group's entries share it (-its logsumexp)
    groups, label = torch.unique(keys, return_inverse=True)
    sums = torch.zeros(len(groups), dtype=u.dtype).index_add_(0, label, u[shown])
    if len(groups) < 2 or distance(sums, torch.ones_like(sums)) > 1e-6:
        return None
    rows = torch.arange(u.numel() // u.shape[-1]).repeat_interleave(u.shape[-1]).reshape(u.shape)[shown]
    if all(len(set(rows[label == g].tolist())) == 1 for g in range(min(len(groups), 64))):
        return None  # each group lies inside one row of keys: the softmax is over the right axis
    size = int(torch.bincount(label).max())
    return _say("sums_groups", size=size)


def hiding(u: torch.Tensor, want: torch.Tensor) -> tuple[str, str] | None:
    """Which entries the user's scores hide (-inf or any score low enough), against the reference's."""
    if bool(torch.isnan(u).any()) or bool((u == float("inf")).any()):
        return "nan", _say("nan")
    hid_u, hid_r = u <= HIDDEN, want <= HIDDEN
    extra, missed = int((hid_u & ~hid_r).sum()), int((hid_r & ~hid_u).sum())
    if not extra and not missed:
        return None
    if missed == int(hid_r.sum()) and not extra and distance(u.masked_fill(hid_r, 0.0),
                                                               want.masked_fill(hid_r, 0.0)) <= SAME:
        return None  # every hidden score kept finite, the rest right: only the fill differs (said by _relation)
    shows = _say("shows", missed=missed, hidden=int(hid_r.sum())) if missed else ""
    hides = _say("hides", extra=extra) if extra else ""
    said = _say("shows_and_hides", shows=shows, hides=hides) if extra and missed else _say("yours", what=shows or hides)
    if extra and missed and bool((hid_u.sum(-1) == hid_r.sum(-1)).all()):
        return "moved", _say("moved", said=said)
    code = "hides-and-shows" if extra and missed else ("shows" if missed else "hides")
    return code, said


def locate(spec, target, case, path: Path, reference_path: Path) -> Departure | None:
    """Run the reference and the user's code on `case`, each traced, and find where they part."""
    from attn_drill.judge import calls

    source = reference_path.read_text(encoding="utf-8")
    per_sequence = getattr(spec, "per_sequence", False)  # steps are indices, and the user may loop over sequences
    indices = per_sequence or spec.index_steps  # keep its integer steps (positions, block ids)
    ref = record(reference_path, lambda: spec.reference(case), skip=constructor_lines(source), indices=indices)
    label_steps(ref, source, getattr(spec, "step_names", None), spec.names_over_calls)
    keep = Recorder(indices=True)  # the user's integer tensors too: an index that orders numbers (arranged_by)
    with Assignments(path, keep.ops) as numbers:
        calls.run(spec, target, case, path, record=keep)
    try:
        user_source = path.read_text(encoding="utf-8")
        thrown = discarded(user_source)
    except (OSError, SyntaxError, ValueError):
        user_source, thrown = "", set()
    gone = departure(ref, keep.ops, bool_steps=not spec.differentiable, thrown=thrown, per_sequence=per_sequence,
                     numbers=numbers)
    if gone is not None:  # said in the user's words: the variable their line assigns, never the model answer's
        try:
            at = gone.step_line or gone.line
            yours = assigned(user_source).get(at, "") if at else ""
        except (SyntaxError, ValueError):
            yours = ""
        gone.step = step_words(gone.kind, yours)
    return gone
