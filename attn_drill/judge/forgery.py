"""What a checked file may not do to get a verdict it did not earn, beyond changing torch (judge/tamper.py):

- use the checker: import attn_drill (found in the source and among the module's names after its import), or
  hand the checker its own code as the answer (a function or class of attn_drill's or the reference's, or a
  subclass of one); calls into the checker while the user's code runs are stopped by judge/audit.py (the
  reference, frames, the garbage collector) and judge/trace.py (attn_drill's own code doing torch ops);
- return a tensor that was not computed for the call: one it returned before for other inputs (a cache keyed
  by shape), one of the checker's own inputs, or one of the reference's outputs (the Ledger).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import audit
from attn_drill.judge.compare import raw_bytes

_MODULE_NAME = re.compile(r"attn_drill(\.[A-Za-z_]\w*)*")


def _say(key: str, /, **params) -> str:
    """This module's sentence `key` (i18n/<lang>/evidence/core.toml, [forgery])."""
    return t(f"evidence.core.forgery.{key}", **params)


def is_checker_module(name) -> bool:
    """attn_drill itself, its modules and the reference modules (not the user's file: attn_drill_user_*)."""
    return isinstance(name, str) and (name == "attn_drill" or name.startswith(("attn_drill.", "attn_drill_reference_")))


def imports_checker(source: str | None, path) -> tuple[int, str] | None:
    """(line, the line's text) of the first import of attn_drill in the source, also inside a function, or of
    a string naming one of its modules (importlib.import_module("attn_drill.judge"), sys.modules[...])."""
    if not source:
        return None
    try:
        tree = ast.parse(source, str(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(is_checker_module(a.name) for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and not node.level and is_checker_module(node.module):
            lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_NAME.fullmatch(node.value):
            lines.append(node.lineno)
    if not lines:
        return None
    line = min(lines)
    text = source.splitlines()[line - 1].strip() if line <= len(source.splitlines()) else ""
    return line, text


def checker_names(module) -> str | None:
    """The first top-level name of the user's module that is attn_drill's: a module, function, class or object."""
    module_type = type(ast)
    for name, value in list(vars(module).items()):
        if name.startswith("__"):
            continue
        if isinstance(value, module_type):
            owner = value.__name__
        elif isinstance(value, type) or callable(value):
            owner = getattr(value, "__module__", None)
        else:
            owner = type(value).__module__
        if is_checker_module(owner):
            return _say("is_module", name=name, owner=owner) if isinstance(value, module_type) else \
                _say("comes_from", name=name, where=_where(owner))
    return None


def provenance(target) -> str | None:
    """Why the resolved target is the checker's own code (a function or class of attn_drill or the reference,
    possibly wrapped by functools.partial, a bound method or a decorator, or a subclass of one); else None."""
    items = target.items() if isinstance(target, dict) else [(getattr(target, "__name__", "it"), target)]
    for name, obj in items:
        seen = 0
        while obj is not None and seen < 20:
            seen += 1
            if isinstance(obj, type):
                for base in obj.__mro__:
                    if is_checker_module(base.__module__):
                        if base is obj:
                            return _say("own_class", name=name, where=_where(base.__module__))
                        return _say("derived_class", name=name, base=base.__qualname__, where=_where(base.__module__))
                break
            if is_checker_module(getattr(obj, "__module__", None)) and callable(obj):
                return _say("own_function", name=name, where=_where(obj.__module__))
            obj = getattr(obj, "func", None) or getattr(obj, "__func__", None) or getattr(obj, "__wrapped__", None)
    return None


def _where(module: str) -> str:
    return f"reference/{module.removeprefix('attn_drill_reference_')}.py" if module.startswith(
        "attn_drill_reference_") else module


def reached(hits: list, label: str = "") -> findings.Finding:
    """The checker-reached finding for the first recorded hit."""
    _, what, line = hits[0]
    what = worded(what)
    where = _say("at_line", line=line) if line else ""
    during = _say("during", label=label) if label else ""
    return findings.make("checker-reached", _say("reached", what=what, where=where, during=during), line=line,
                         score=2.0)


def worded(what: str) -> str:
    """What a hit says the user's code did, in the language in use: the audit hook says it in English and keeps
    the words for it (audit.WORDS); any other hit's words (the tracer's) are as they came."""
    try:
        key, params = audit.WORDS[what]
        return t(key, **params)
    except Exception:  # noqa: BLE001 - no words kept for it (the tracer's), or words the user's code spoilt
        return what


def take_hits(slug: str | None = None) -> tuple[list, list]:
    """(hits that modified a function's code, hits that reached the checker), since the last take."""
    hits = audit.take()
    return [h for h in hits if h[0] == "torch-modified"], [h for h in hits if h[0] == "checker-reached"]


# --- fresh outputs ---------------------------------------------------------------------------------------

@dataclass
class _Span:
    start: int
    end: int
    key: object  # the inputs the tensor was given for (None: the checker's own tensor)
    what: str  # how to name it
    tensor: torch.Tensor  # kept alive, so that no other tensor gets its memory


@dataclass
class Ledger:
    """The memory of every tensor the user's code was given or returned during a check, and of the checker's
    own (case inputs, reference outputs). An output must not share memory with a tensor of another call (other
    inputs) or of the checker; it may share it with this call's inputs (a view) or with an output of a call
    with the very same inputs (a cache keyed by the arguments). Where every input is an integer (masks), an
    output is a function of integers alone, and may share memory with any other output (causal_mask(tq, tk)
    may slice every mask out of one cached triangle)."""

    spans: list[_Span] = field(default_factory=list)
    cache_ok: bool = False  # masks: outputs are functions of integer arguments only, so any cache of them is fine

    def add(self, tensor, key, what: str) -> None:
        span = _span(tensor)
        if span is not None:
            self.spans.append(_Span(span[0], span[1], key, what, tensor))

    def checker(self, tensors, what: str) -> None:
        for x in tensors:
            if isinstance(x, torch.Tensor):
                self.add(x, None, what)

    def call(self, outcome, names) -> findings.Finding | None:
        """Check the outcome's outputs against what came before, then remember its inputs and outputs."""
        key = call_key(outcome)
        label = outcome.case.label
        found = None
        for name, x in zip(names, outcome.outputs or ()):
            span = _span(x)
            if span is None or found:
                continue
            for s in self.spans:
                if s.start < span[1] and span[0] < s.end and (s.key is None or (s.key != key and not self.cache_ok)):
                    found = findings.make(
                        "output-reused", _say("shares", name=name, case=label, how=_dtype(outcome), other=s.what),
                        score=2.0)
                    break
        for n, x in outcome.inputs.items():
            if isinstance(x, torch.Tensor):
                self.add(x, key, _say("given", name=n, case=label, how=_dtype(outcome)))
        for name, x in zip(names, outcome.outputs or ()):
            self.add(x, key, _say("returned", name=name, case=label, how=_dtype(outcome)))
        return found


def _dtype(outcome) -> str:
    dtype = getattr(outcome, "dtype", torch.float64)
    device = getattr(outcome, "device", "cpu")
    parts = [] if dtype == torch.float64 else [str(dtype).replace("torch.", "")]
    if str(device) != "cpu":
        parts.append(_say("on", device=device))
    return _say("how", how=_say("sep").join(parts)) if parts else ""


def _span(t) -> tuple[int, int] | None:
    if not isinstance(t, torch.Tensor) or t.device.type == "meta":
        return None
    try:
        storage = t.untyped_storage()
        start, size = storage.data_ptr(), storage.nbytes()
    except (RuntimeError, NotImplementedError):  # a tensor without storage (sparse, nested)
        return None
    return (start, start + size) if start and size else None


def call_key(outcome):
    """The call's arguments by value: equal keys, equal inputs."""
    parts = [repr(sorted(outcome.case.config.items()))]
    for n, x in sorted(outcome.inputs.items()):
        if isinstance(x, torch.Tensor):
            if x.device.type == "meta":
                parts.append((n, "meta", str(x.dtype), tuple(x.shape)))
            else:
                raw = raw_bytes(x)
                parts.append((n, str(x.dtype), tuple(x.shape), raw))
        else:
            parts.append((n, repr(x)))
    return tuple(parts)
