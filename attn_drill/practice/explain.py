"""`attn-drill explain` and the mock's follow-up after a pass: questions about the user's OWN passing file.

The worker traces the file once (attn_drill/judge/explain.py: every torch call's line and output shape on a
case whose sizes are all distinct); everything here is plain Python (no torch, no rich):

- shape: "line 23, `scores = q @ k.transpose(-2, -1)`: what shape?", answered in symbols (`B H Tq Tk`) and
  read back into sizes, so `D` and `H*d` are both right when D = H * d;
- cost: the bytes a traced tensor takes at real sizes (T = 4096, H = 32, fp16), multiple choice;
- concept: a question of the bank (practice/questions.toml) tied to the line that does it (the scale, the mask fill);
- breaks: "what breaks if...", from attn_drill/practice/mutants.py when it is there (mutated lines, checked).

Which lines are asked is decided from what ran (the op names, the numbers passed, the symbolic shapes), never
from the source text; the source is read (with `ast`) to show a line, to know which lines make up one
statement, and to name the value a question is about (the last target assigned, the value returned).

A question is a dict, the format mutants.py's questions have too: {"kind", "line", "code", "prompt",
"choices" (None for a typed shape), "answer" (the index of the right choice, from 0; or the shape in symbols),
"explain" (shown once answered)}; a shape question also has "shape" (the sizes) and "symbols" (the table its
answer is read with). The user types choice numbers from 1, and --json shows the answer so.
"""

from __future__ import annotations

import ast
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from attn_drill.i18n import t

KINDS = ("shape", "breaks", "cost", "concept")
MAX_QUESTIONS = 5
MAX_SHAPES = 3

# Every symbol a case may use (judge/explain.py), and other names typed for them: --answers is checked with it.
SYMBOLS = ("B", "H", "Hkv", "T", "Tq", "Tk", "T_past", "T_new", "d", "dv", "D", "block_size", "kv_rank", "d_nope",
           "d_rope", "d_v")
ALIASES = {"block": "block_size", "bs": "block_size", "dk": "d", "d_model": "D", "n_heads": "H"}

# Real sizes for the cost question: a 7B-class model (LLaMA-2 7B with GQA's 8 kv heads), fp16.
REAL = {"B": 1, "H": 32, "Hkv": 8, "T": 4096, "Tq": 4096, "Tk": 4096, "T_past": 4095, "T_new": 1, "d": 128,
        "dv": 128, "D": 4096, "block_size": 128,
        "kv_rank": 512, "d_nope": 128, "d_rope": 64, "d_v": 128}  # mla: DeepSeek-V3's latent and head widths
BYTES = {"bool": 1, "int64": 8}  # per entry; any float is asked as fp16, 2 bytes

QUERY = {"Tq", "T", "T_new", "block_size"}  # the axis of the queries
KEY = {"Tk", "T", "T_past+T_new", "block_size"}  # the axis of the keys
HEAD_DIM = {"d", "dv", "d_v"}
HEADS = {"H", "Hkv", "B*H"}
MATMUL = {"matmul", "__matmul__", "__rmatmul__", "bmm", "einsum", "baddbmm", "mm", "tensordot"}
SOFTMAX = {"softmax", "_softmax", "exp", "exp_", "log_softmax", "logsumexp"}
RESHAPE = {"view", "reshape", "transpose", "permute", "unflatten", "flatten", "movedim", "swapaxes", "contiguous",
           "split", "chunk", "unbind", "__getitem__", "stack", "t", "mT", "expand", "squeeze", "unsqueeze"}
REPEAT = {"repeat_interleave", "expand", "repeat", "index_select"}
REDUCE = {"max", "amax", "sum", "logsumexp", "mean", "maximum"}
FILL = {"masked_fill", "masked_fill_", "where"}
SCALE = {"div", "mul", "__truediv__", "__mul__", "__rmul__", "__itruediv__", "__imul__", "div_", "mul_"}
COSMETIC = {"to", "contiguous", "float", "double", "half", "type_as", "clone", "detach", "dropout", "__get__",
            "size", "dim", "promote_types", "__len__", "item", "tolist"}

# tag -> its priority as a shape question; why the shape is what it is: the i18n key practice.explain.shape.why.<tag>
# ("other" has no why)
TAGS = {"scores": 10, "split": 9, "merge": 9, "repeat": 9, "cache": 9, "mask": 9, "weighted-sum": 8, "reduce": 8,
        "stable": 7, "rope": 8, "weights": 6, "mask-fill": 5, "scale": 5, "projection": 3, "other": 2}
# tag -> the bank question (practice/questions.toml) a concept question asks about that line
CONCEPTS = {"scale": "scaling-why", "mask-fill": "masks-neg-inf-not-zero", "repeat": "gqa-head-mapping",
            "cache": "kv-why", "rope": "rope-relative", "reduce": "softmax-max-subtract",
            "stable": "softmax-max-subtract", "split": "heads-split", "merge": "heads-merge",
            "weights": "softmax-dim", "mask": "masks-cache-alignment"}
# exercise -> tag -> its own bank question, where the general one misses the point of the exercise
EXERCISE_CONCEPTS = {"mla": {"cache": "mla-cache-bytes", "rope": "mla-decoupled-rope"}}
# exercise -> the bank question its round always asks (on its last line): what the exercise exists for
ALWAYS = {"linear-attention": "linear-attention-cost", "attention-backward": "backward-rowsum-why"}
CONCEPT_ORDER = ("scale", "mask-fill", "repeat", "cache", "rope", "stable", "reduce", "split", "merge", "weights",
                 "mask")


# -- symbols ------------------------------------------------------------------------------------------------
def size_names(symbols: dict[str, int]) -> dict[int, str]:
    """Each size the case can make, by the name a shape answer gives it: the symbols, the literals 1, 2, 3, half
    the head dim (d/2), sums of lengths (T_past+T_new), products (B*H, Hkv*d), quotients (H/Hkv), multiples (3*D)."""
    names: dict[int, str] = {}
    for s, v in symbols.items():
        names.setdefault(v, s)
    for literal in (1, 2, 3):  # the 2 of RoPE's halves, the 3 of q|k|v: never a size of the case
        names.setdefault(literal, str(literal))
    keys = list(symbols)
    for a in ("d", "dv", "d_rope"):
        if a in symbols and symbols[a] % 2 == 0:
            names.setdefault(symbols[a] // 2, f"{a}/2")
    lengths = [s for s in keys if s.startswith("T")]
    for i, a in enumerate(lengths):
        for b in lengths[i + 1:]:
            names.setdefault(symbols[a] + symbols[b], f"{a}+{b}")  # T_past+T_new: the keys after a cached prefix
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            names.setdefault(symbols[a] * symbols[b], f"{a}*{b}")
    for a in keys:
        for b in keys:
            if a != b and symbols[a] % symbols[b] == 0:
                names.setdefault(symbols[a] // symbols[b], f"{a}/{b}")
    for a in keys:
        for k in (2, 3, 4):
            names.setdefault(k * symbols[a], f"{k}*{a}")
    return names


def symbolic(shape: list[int], symbols: dict[str, int]) -> list[str]:
    """[2, 3, 5, 7] -> ["B", "H", "Tq", "Tk"]; a size with no name stays a number."""
    names = size_names(symbols)
    return [names.get(n, str(n)) for n in shape]


def resolve(name: str, symbols: dict[str, int]) -> str | None:
    """The symbol a typed name means: exact case first (d is not D), then any case, then an alias."""
    if name in symbols:
        return name
    lower = {s.lower(): s for s in symbols}
    if name.lower() in lower and sum(s.lower() == name.lower() for s in symbols) == 1:
        return lower[name.lower()]
    alias = ALIASES.get(name.lower())
    if alias in symbols:
        return alias
    if name.lower() in ("tq", "tk") and "T" in symbols:  # self-attention: the one length is T
        return "T"
    return None


_TOKEN = re.compile(r"\s*(\d+|[A-Za-z_][A-Za-z_0-9]*|[*/+-])")


def evaluate(expr: str, symbols: dict[str, int]) -> int | None:
    """One axis typed as an expression of symbols: `Tq`, `H*d`, `T_past+T_new`, `d/2`, `3*D`. None if unreadable."""
    tokens, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            return None
        tokens.append(m.group(1))
        pos = m.end()
    if not tokens:
        return None
    total, sign, term, op = 0, 1, None, "*"
    for i, tok in enumerate(tokens + ["+"]):
        if tok in "+-" and i > 0:
            if term is None:
                return None
            total, sign, term, op = total + sign * term, 1 if tok == "+" else -1, None, "*"
        elif tok in "*/":
            if term is None:
                return None
            op = tok
        else:
            value = int(tok) if tok.isdigit() else symbols.get(resolve(tok, symbols) or "")
            if value is None:
                return None
            if term is None:
                term = value
            elif op == "*":
                term *= value
            elif value and term % value == 0:
                term //= value
            else:
                return None
    return total


def read_shape(text: str, symbols: dict[str, int]) -> list[int] | None:
    """`B H Tq Tk`, `(B, H, Tq, Tk)`, `[b,h,tq,tk]`, `B Tq H*d` -> sizes; None when an axis cannot be read."""
    text = re.sub(r"[()\[\]{}]", " ", text)
    text = re.sub(r"\s*([*/+-])\s*", r"\1", text.strip())
    axes = [a for a in re.split(r"[\s,]+", text) if a]
    sizes = [evaluate(a, symbols) for a in axes]
    return None if not sizes or None in sizes else sizes


# -- answers --------------------------------------------------------------------------------------------------
def parse_answers(text: str | None) -> list[str] | None:
    """--answers: "B H T d,2,1" -> ["B H T d", "2", "1"] (";" separates instead when the text has one, so
    a shape may keep its commas). A ValueError names an item that is neither a choice nor a shape."""
    if text is None:
        return None
    items = [i.strip() for i in text.split(";" if ";" in text else ",")]
    everyone = {s: 1 for s in SYMBOLS}
    for item in items:
        if item.isdigit() and int(item) >= 1:
            continue
        if not item or item == "0" or read_shape(item, everyone) is None:
            raise ValueError(t("practice.explain.answers.not_an_answer", item=item))
    return items


def refusal(q: dict, typed: str) -> str | None:
    """Why a typed answer to `q` is asked for again, in words; None when it is taken (explain and the mock alike).
    `-` skips a question and an empty line answers nothing: the callers handle both before asking this."""
    n = len(q.get("choices") or ())
    if n:
        return None if typed.isdigit() and 1 <= int(typed) <= n else t("practice.explain.answers.refuse_choice", n=n)
    if read_shape(typed, q["symbols"]) is not None:
        return None
    return t("practice.explain.answers.refuse_shape", typed=typed, symbols=" ".join(q["symbols"]))


def is_right(q: dict, given: str | None) -> bool:
    if given is None:
        return False
    if q.get("choices"):
        return given.strip().isdigit() and int(given) == q["answer"] + 1
    return read_shape(given, q["symbols"]) == q["shape"]


def truth(q: dict) -> str:
    """The right answer in words: the choice's text, or the shape with its sizes."""
    if q.get("choices"):
        return f"{q['answer'] + 1}) {q['choices'][q['answer']]}"
    sizes = ", ".join(map(str, q["shape"]))
    return f"({q['answer'].replace(' ', ', ')}) = ({sizes})"


def kinds_missed(questions: list[dict], answers: list) -> list[dict]:
    """What the history keeps of a round: each question's kind and line, and whether it was right."""
    return [{"kind": q["kind"], "line": q.get("line"), "right": is_right(q, a)} for q, a in zip(questions, answers)]


# -- reading the trace: statements, executions ------------------------------------------------------------------
@dataclass(frozen=True)
class Stmt:
    first: int
    last: int
    what: str | None  # the value asked about: "scores", "vb", "the first value it returns"; None: nothing


def statements(source: str) -> dict[int, Stmt]:
    """line -> the statement it belongs to; a compound statement (if, for, with, def) owns only its header.
    Used to group the calls one statement makes, to show it, and to say which value a question is about."""
    out: dict[int, Stmt] = {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return out
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            stmt = Stmt(first, max(node.lineno, body[0].lineno - 1), None)
        else:
            stmt = Stmt(node.lineno, node.end_lineno or node.lineno, _what(node, source))
        for line in range(stmt.first, stmt.last + 1):
            if line not in out or out[line].last - out[line].first > stmt.last - stmt.first:
                out[line] = stmt  # the innermost statement wins
    return out


def _trivial(node: ast.AST) -> bool:
    """An expression that runs no torch call of its own: a name, an attribute, a constant."""
    return isinstance(node, (ast.Name, ast.Attribute, ast.Constant))


def _splits(value: ast.AST) -> bool:
    """A call that returns several tensors (split, chunk, unbind), as the statement's whole value."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        value.func.attr in ("split", "chunk", "unbind", "tensor_split")


def _what(node: ast.stmt, source: str) -> str | None:
    """The value a shape question asks about: the last target assigned (the one whose call runs last), or the
    returned value whose call runs last (in `return weights @ v, weights` the first); None for anything else."""
    text = lambda n: ast.get_source_segment(source, n) or ""  # noqa: E731
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return text(node.target)
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Tuple):
            if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
                busy = [i for i, v in enumerate(value.elts) if not _trivial(v)]
                return text(target.elts[busy[-1]]) if busy else None
            named = [t for t in target.elts if text(t) != "_"]  # `m, _ = x.max(...)`: m, shaped like the _
            return text(named[-1]) if named else None
        if _splits(value):
            return None  # `Q = x.split(...)` holds a tuple of tensors: no one shape to ask about
        if isinstance(value, ast.Lambda):
            return None  # `split = lambda t: t.view(...)` holds a function: its tensors are made where it is called
        return text(target)
    if isinstance(node, ast.Return) and node.value is not None:
        if isinstance(node.value, ast.Tuple):
            busy = [i for i, v in enumerate(node.value.elts) if not _trivial(v)]
            ordinal = ("first", "second", "third", "fourth")
            return f"the {ordinal[busy[-1]]} value it returns" if busy and busy[-1] < len(ordinal) else None
        return "what it returns"
    return None


@dataclass
class Op:
    line: int
    depth: int
    name: str
    shape: list[int] | None
    dtype: str | None
    number: object


@dataclass
class Execution:
    """One run of one statement: its own calls, and whether its value came back from a helper it called."""
    stmt: int
    depth: int
    start: int  # the index of its first call
    ops: list[Op] = field(default_factory=list)
    tail_nested: bool = False


def executions(ops: list[Op], stmt_of: dict[int, Stmt]) -> list[Execution]:
    """Group the calls by statement run, in order. A call deeper in the stack on the same statement (a
    comprehension) is the statement's own; a call deeper on another statement is a helper's, and while it is
    the last thing the statement ran, the statement's value is the helper's (tail_nested)."""
    done: list[Execution] = []
    open_: list[Execution] = []
    for index, op in enumerate(ops):
        stmt = stmt_of[op.line].first if op.line in stmt_of else op.line
        mine = next((i for i in range(len(open_) - 1, -1, -1)
                     if open_[i].stmt == stmt and open_[i].depth <= op.depth), None)
        if mine is None:
            while open_ and open_[-1].depth >= op.depth:
                done.append(open_.pop())
            open_.append(Execution(stmt, op.depth, index))
            mine = len(open_) - 1
        else:
            while len(open_) > mine + 1:
                done.append(open_.pop())
        for outer in open_[:mine]:
            outer.tail_nested = True
        open_[mine].ops.append(op)
        open_[mine].tail_nested = False
    done += open_
    return sorted(done, key=lambda e: e.start)


# -- candidates: the lines worth asking about ---------------------------------------------------------------------
@dataclass
class Line:
    line: int  # the statement's first line
    code: str
    shape: list[int]
    names: list[str]
    dtype: str
    tags: list[str]
    order: int  # when it first ran
    what: str = ""  # the value asked about: "scores", "what it returns", "the first value it returns"

    @property
    def priority(self) -> int:
        return max(TAGS[tag] for tag in self.tags)

    @property
    def tag(self) -> str:
        return max(self.tags, key=lambda tag: TAGS[tag])


def code_of(source_lines: list[str], span: tuple[int, int]) -> str:
    """A statement's text on one line (its lines joined, comments dropped), whole."""
    first, last = span
    parts = [_strip_comment(source_lines[i - 1]) for i in range(first, min(last, len(source_lines)) + 1)]
    text = re.sub(r"\s+", " ", " ".join(parts)).strip()
    text = re.sub(r"([(\[]) ", r"\1", text)  # "(\n    x" joined: "(x", not "( x"
    return shown(text)


def shown(code: str) -> str:
    """One line of code as a question shows it: whole, without its trailing comment (the screen wraps it)."""
    return _strip_comment(code)


def _strip_comment(text: str) -> str:
    """Drop a trailing # comment (not one inside a string)."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return text[:i].strip()
    return text.strip()


def tags_of(names: list[str], calls: list[Op], dtype: str, symbols: dict) -> list[str]:
    """What a statement does, read from the calls it made and the shape it left."""
    tags = []
    ops = {op.name for op in calls}
    attn = len(names) >= 2 and names[-2] in QUERY and names[-1] in KEY
    fills = any(op.name in FILL and _very_negative(op.number) for op in calls)
    scales = any(op.name in SCALE and _scale(op.number, symbols) for op in calls)
    if dtype == "bool":
        return ["mask"]
    if attn and ops & MATMUL:
        tags.append("scores")
    if attn and (ops & SOFTMAX or (ops & {"div", "__truediv__"} and not scales)):
        tags.append("weights")
    if fills:
        tags.append("mask-fill")
    if scales and (attn or names[-1] in HEAD_DIM):
        tags.append("scale")
    if len(names) >= 2 and names[-2] in QUERY and names[-1] in HEAD_DIM and ops & MATMUL:
        tags.append("weighted-sum")
    if ops & REPEAT and "Hkv" in symbols and "H" in names:
        tags.append("repeat")
    # a reshape that moves features into heads; a slice alone (flash's key block k[:, :, j:j + bs]) is no split
    moves = ops & (RESHAPE - {"__getitem__"})
    tokens = set(names) & (QUERY | KEY | {"T_past", "Tk"})  # a head split keeps the tokens: a (d, dv) state is none
    if set(names) & HEADS and set(names) & HEAD_DIM and tokens and moves and "weighted-sum" not in tags \
            and not ops & MATMUL:  # a product with a transposed operand (p^T @ dout) splits nothing
        tags.append("split")
    if len(names) == 3 and names[1] in QUERY and names[2] == "D" and ops & RESHAPE and "linear" not in ops:
        tags.append("merge")
    if names[-1] == "1" and ops & REDUCE:
        tags.append("reduce")
    elif ops & {"max", "amax", "logsumexp"} and ops & {"sub", "__sub__", "__rsub__"}:
        tags.append("stable")  # x - x.max(...): the row's max subtracted
    if any(n in ("d/2", "d_rope/2") for n in names) or ops & {"cos", "sin", "polar", "view_as_complex"}:
        tags.append("rope")
    if "cat" in ops and any("T_past" in n for n in names):
        tags.append("cache")
    if "linear" in ops and not tags:
        tags.append("projection")
    if not tags and not ops <= COSMETIC:
        tags.append("other")
    return tags


def _very_negative(n) -> bool:
    return n == "-inf" or (isinstance(n, (int, float)) and n <= -1e4)


def _scale(n, symbols: dict) -> bool:
    """Is n sqrt(d) or 1/sqrt(d), the attention scale?"""
    d = symbols.get("d")
    if not d or not isinstance(n, (int, float)) or not n:
        return False
    return math.isclose(n, math.sqrt(d), rel_tol=1e-6) or math.isclose(n, 1 / math.sqrt(d), rel_tol=1e-6)


def candidates(trace: dict, source: str) -> list[Line]:
    """Every statement that left one tensor shape, the same shape each time it ran, with its tags. A statement
    is judged in the first call that ran it (masks: causal_mask's own call, not attention_mask's use of it)."""
    stmt_of = statements(source)
    lines = source.splitlines()
    symbols = trace["symbols"]
    decided: set[int] = set()
    out: list[Line] = []
    order = 0
    for call in trace["calls"]:
        runs: dict[int, list[Execution]] = {}
        for ex in executions([Op(*op) for op in call["ops"]], stmt_of):
            if ex.stmt not in decided:
                runs.setdefault(ex.stmt, []).append(ex)
        for stmt, exs in runs.items():
            decided.add(stmt)
            order += 1
            last = [ex.ops[-1] for ex in exs]
            if any(ex.tail_nested for ex in exs) or any(op.shape is None for op in last):
                continue  # its value comes from a helper, or it is not a tensor
            shapes = {tuple(symbolic(op.shape, symbols)) for op in last}
            if len(shapes) != 1:
                continue  # a different shape on different runs (a helper called with other inputs)
            names = list(shapes.pop())
            if not names or any(n.isdigit() and int(n) > 4 for n in names):
                continue  # a size no symbol names: not a fair question
            calls = [op for ex in exs for op in ex.ops]
            tags = tags_of(names, calls, last[-1].dtype, symbols)
            st = stmt_of.get(stmt)
            if not tags or st is None or st.what is None:
                continue  # nothing it does, or no value to name (a bare expression, a loop's header)
            out.append(Line(stmt, code_of(lines, (st.first, st.last)), last[-1].shape, names, last[-1].dtype, tags,
                            order, st.what))
    return out


# -- questions ---------------------------------------------------------------------------------------------------
_NTH = re.compile(r"the (first|second|third|fourth) value it returns")


def shape_prompt(what: str) -> str:
    """The question about the value `what` (Stmt.what: a target's code, "what it returns", "the first value it
    returns"), in words."""
    if what == "what it returns":
        return t("practice.explain.shape.prompt_return")
    nth = _NTH.fullmatch(what)
    if nth:
        return t("practice.explain.shape.prompt_nth", ordinal=t(f"practice.explain.shape.{nth.group(1)}"))
    return t("practice.explain.shape.prompt", what=what)


def shape_question(c: Line, symbols: dict[str, int]) -> dict:
    answer = " ".join(c.names)
    why = t(f"practice.explain.shape.why.{c.tag}", q=c.names[-2] if len(c.names) > 1 else "", k=c.names[-1],
            last=c.names[-1]) if c.tag != "other" else ""
    if c.tag == "mask" and "1" in c.names:
        why = t("practice.explain.shape.and_ones", why=why)
    used = {w for n in c.names for w in re.findall(r"[A-Za-z_]+", n)}
    sizes = ", ".join(f"{s}={v}" for s, v in symbols.items() if s in used)
    shown_as = {"sizes": sizes, "shape": ", ".join(map(str, c.shape)), "names": ", ".join(c.names)}
    return {"kind": "shape", "line": c.line, "code": c.code, "prompt": shape_prompt(c.what), "choices": None,
            "answer": answer, "shape": c.shape, "symbols": symbols,
            "explain": t("practice.explain.shape.explain_why", why=why, **shown_as) if why
            else t("practice.explain.shape.explain", **shown_as)}


def pick_shapes(cands: list[Line], n: int, rng: random.Random) -> list[Line]:
    """Up to n lines with distinct answers: one of each tag first (the likeliest to matter first), then by priority,
    the seed choosing among equals; returned in the order they run."""
    ranked = [c for c in cands if c.tag not in ("other", "projection") or len(c.names) >= 3]
    ties = {id(c): rng.random() for c in ranked}
    ranked.sort(key=lambda c: (-c.priority, ties[id(c)]))
    chosen: list[Line] = []
    for first_pass in (True, False):
        if not first_pass and len(chosen) < 2:  # a short file: its plainer lines too
            ranked += sorted((c for c in cands if c not in ranked), key=lambda c: c.order)
        for c in ranked:
            if len(chosen) >= n:
                break
            if c in chosen or any(c.names == o.names for o in chosen):
                continue
            if first_pass and any(c.tag == o.tag for o in chosen):
                continue
            chosen.append(c)
    return sorted(chosen, key=lambda c: c.order)


def entries(names: list[str], sizes: dict[str, int]) -> int | None:
    """How many entries a shape has at the given sizes (B = 1: per batch element)."""
    total = 1
    for n in names:
        v = evaluate(n, sizes)
        if v is None:
            return None
        total *= v
    return total


def size_text(n: float) -> str:
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= div:
            v = n / div
            return f"{v:g} {unit}" if v == int(v) or v >= 100 else f"{v:.1f} {unit}"
    return t("practice.explain.cost.bytes", n=n)


def cost_question(cands: list[Line], rng: random.Random) -> dict | None:
    """Bytes of one traced tensor at real sizes: the scores (or weights) if there are any, else the biggest."""
    sized = [(entries(c.names, REAL), c) for c in cands if len(c.names) >= 2 and "B" in c.names]
    sized = [(e, c) for e, c in sized if e and e >= 4096]
    if not sized:
        return None
    best = [x for x in sized if set(x[1].tags) & {"scores", "weights", "cache"}] or sized
    count, c = max(best, key=lambda x: (x[0], -x[1].order))
    per = BYTES.get(c.dtype or "", 2)
    kind = t("practice.explain.cost." + {1: "dtype_bool", 8: "dtype_int64"}.get(per, "dtype_fp16"))
    right = count * per
    used = [s for s in REAL if s != "B" and any(re.search(rf"\b{s}\b", n) for n in c.names)]
    at = ", ".join(f"{s} = {REAL[s]}" for s in used)
    pool = [right * 2, right // 2, right * 32 if "H" not in c.names else right // 32,
            right // 4096 if any(s in used for s in ("T", "Tq", "Tk")) else right * 4096]
    wrong = [w for w in dict.fromkeys(pool) if w > 0 and w != right and size_text(w) != size_text(right)][:3]
    choices = [right] + wrong
    rng.shuffle(choices)
    factors = " x ".join(f"{REAL[n] if n in REAL else evaluate(n, REAL)}" for n in c.names if n != "B")
    worked = t("practice.explain.cost." + ("worked" if per > 1 else "worked_one"), names=" ".join(c.names),
               factors=factors, count=count, per=per, total=right, size=size_text(right))
    if set(c.tags) & {"scores", "weights"} and "block_size" in c.names:
        full = entries([n.replace("block_size", "Tk") for n in c.names], REAL) * per
        worked = t("practice.explain.cost.blocks", worked=worked, size=size_text(full))
    elif set(c.tags) & {"scores", "weights"}:
        worked = t("practice.explain.cost.flash", worked=worked)
    return {"kind": "cost", "line": c.line, "code": c.code,
            "prompt": t("practice.explain.cost.prompt", at=at, dtype=kind, names=" ".join(c.names)),
            "choices": [size_text(x) for x in choices], "answer": choices.index(right),
            "explain": t("practice.explain.cost.explain", worked=worked)}


def concept_questions(cands: list[Line], symbols: dict, rng: random.Random,
                      avoid: set[str] = frozenset(), exercise: str = "") -> list[dict]:
    """Bank questions about what the user's lines do (why sqrt(d) at the scale, why -inf at the mask), the
    likeliest to matter first (the seed orders the first two)."""
    from attn_drill.practice import questions

    bank = questions.bank()
    found = []
    for tag in CONCEPT_ORDER:
        c = next((c for c in cands if tag in c.tags), None)
        qid = "flash-rescale" if tag == "reduce" and "block_size" in symbols else \
            EXERCISE_CONCEPTS.get(exercise, {}).get(tag, CONCEPTS[tag])
        if c is not None and qid in bank and qid not in avoid and qid not in {q[1] for q in found}:
            found.append((c, qid))
    if len(found) > 1 and rng.random() < 0.5:
        found[:2] = found[1::-1]
    own = ALWAYS.get(exercise)
    if own in bank and own not in avoid and cands:
        found = [(cands[-1], own)] + [f for f in found if f[1] != own]
    return [{"kind": "concept", "line": c.line, "code": c.code, "prompt": bank[qid].question,
             "choices": list(bank[qid].choices), "answer": bank[qid].answer - 1, "explain": bank[qid].explanation,
             "bank_id": qid} for c, qid in found]


def from_trace(trace: dict, source: str, seed: int, breaks: list[dict] = (),
               avoid: set[str] = frozenset()) -> list[dict]:
    """The round: shapes, one cost and one concept question (two why/cost questions when nothing breaks),
    the "what breaks" ones, MAX_QUESTIONS at most, in the order of the lines they are about."""
    rng = random.Random(seed)
    cands = candidates(trace, source)
    breaks = [b for b in breaks if _well_formed(b)][:2]
    concepts = concept_questions(cands, trace["symbols"], rng, avoid, trace.get("exercise", ""))
    why = [q for q in (cost_question(cands, rng), *concepts[:1]) if q]
    if breaks:  # one why-question: the exercise's own when it has one
        own = [q for q in why if q.get("bank_id") == ALWAYS.get(trace.get("exercise", ""))]
        why = own or (why[:1] if len(why) < 2 else [rng.choice(why)])
    n_shapes = min(MAX_SHAPES, MAX_QUESTIONS - len(breaks) - len(why))
    shapes = [shape_question(c, trace["symbols"]) for c in pick_shapes(cands, n_shapes, rng)]
    if len(shapes) + len(why) + len(breaks) < 4:  # a short file: one more why, on another line if there is one
        why += [q for q in concepts if q not in why][:4 - len(shapes) - len(why) - len(breaks)]
    walk = sorted(shapes + why, key=lambda q: (q["line"], KINDS.index(q["kind"])))
    return (walk + breaks)[:MAX_QUESTIONS]


def well_formed(q) -> bool:
    """A question the round can ask and grade (the mock checks the ones it saved): choices, or a typed shape."""
    if _well_formed(q):
        return True
    try:
        return (q.get("kind") == "shape" and isinstance(q.get("prompt"), str) and isinstance(q.get("answer"), str)
                and isinstance(q.get("shape"), list) and all(type(n) is int for n in q["shape"])
                and isinstance(q.get("symbols"), dict) and all(isinstance(k, str) and type(v) is int and v > 0
                                                                for k, v in q["symbols"].items())
                and isinstance(q.get("code", ""), str) and isinstance(q.get("explain", ""), str))
    except (TypeError, AttributeError):
        return False


def top_up(asked: list[dict], exercise: str, seed: int, avoid: set[str] = frozenset()) -> list[dict]:
    """Bank questions on the exercise's concepts, for a file too short to give 4 questions of its own."""
    from attn_drill import catalogue
    from attn_drill.practice import questions

    ex = catalogue.get(exercise)
    n = 4 - len(asked)
    if n <= 0 or ex is None:
        return []
    seen = set(avoid) | {q.get("bank_id") for q in asked}
    picked = [q for q in questions.pick(ex.concepts, n + len(seen), rng=random.Random(seed), avoid=seen)
              if q.id not in seen][:n]
    return [{"kind": "concept", "line": None, "code": "", "prompt": q.question, "choices": list(q.choices),
             "answer": q.answer - 1, "explain": q.explanation, "bank_id": q.id} for q in picked]


def _well_formed(q) -> bool:
    """A choice question (also one from elsewhere: mutants.py) that the round can ask and grade."""
    try:
        return (isinstance(q, dict) and q.get("kind") in KINDS and isinstance(q.get("prompt"), str)
                and isinstance(q.get("choices"), list) and len(q["choices"]) >= 2
                and isinstance(q.get("answer"), int) and 0 <= q["answer"] < len(q["choices"])
                and isinstance(q.get("explain", ""), str))
    except TypeError:
        return False


def what_breaks(path: Path, exercise: str, seed: int, pool=None) -> list[dict]:
    """Up to two "what breaks if..." questions from attn_drill/practice/mutants.py, if that module is there (its checks
    fork from `pool`, a warm pool the caller holds, when given)."""
    try:
        from attn_drill.practice import mutants
    except ImportError:
        return []
    try:
        found = mutants.what_breaks(path, exercise, seed, limit=2, **({"pool": pool} if pool else {}))
        return [dict(q, kind="breaks") for q in found][:2]
    except Exception:  # noqa: BLE001 - a round without them is still a round
        return []


# -- running it ----------------------------------------------------------------------------------------------------
@dataclass
class Round:
    exercise: str
    file: str
    seed: int
    case: str = ""  # the sizes the file was traced on
    given: str = ""  # its inputs in symbols
    symbols: dict = field(default_factory=dict)
    questions: list[dict] = field(default_factory=list)
    error: str = ""  # why there are no questions


def build(path: Path, exercise: str, seed: int, *, timeout: float | None = None, pool=None,
          avoid: set[str] = frozenset()) -> Round:
    """Trace the (passing) file in a worker process (forked from `pool`, a process/warm.py WarmPool, when
    given) and make its questions; `avoid`: bank questions not to ask again."""
    from attn_drill.process import runner

    r = Round(exercise, str(path), seed)
    result = runner.run_task(runner.Job(Path(path), exercise, task="explain"), seed,
                             runner.DEFAULT_TIMEOUT if timeout is None else timeout,
                             spawn=pool.spawn if pool else None)
    if not isinstance(result, dict):  # a Report: the worker timed out or crashed
        worst = result.errors[0] if result.errors else None
        r.error = t("practice.explain.round.trace_failed",
                    title=worst.title if worst else t("practice.explain.round.no_result"))
        return r
    if "error" in result:
        r.error = str(result["error"])
        return r
    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        r.error = t("practice.explain.round.unreadable", path=path, error=e)
        return r
    r.case, r.given, r.symbols = result.get("case", ""), result.get("given", ""), result.get("symbols", {})
    r.questions = from_trace(result, source, seed, what_breaks(Path(path), exercise, seed, pool), avoid)
    r.questions += top_up(r.questions, exercise, seed, avoid)
    if not r.questions:
        r.error = t("practice.explain.round.nothing")
    return r


def summary(r: Round, answers: list | None = None) -> dict:
    """The round as JSON (--json): the questions, and with answers what was given and whether it was right."""
    qs = []
    for i, q in enumerate(r.questions):
        d = {k: q.get(k) for k in ("kind", "line", "code", "prompt", "choices", "answer", "explain")}
        if q.get("choices"):
            d["answer"] = q["answer"] + 1  # as it is typed: choices count from 1
        else:
            d["shape"] = q["shape"]
        if answers is not None:
            given = answers[i] if i < len(answers) else None
            d["given"], d["right"] = given, is_right(q, given)
        qs.append(d)
    out = {"exercise": r.exercise, "file": r.file, "seed": r.seed, "case": r.case, "given": r.given,
           "symbols": r.symbols, "questions": qs}
    if answers is not None:
        out["right"], out["total"] = sum(q["right"] for q in qs), len(qs)
    return out
