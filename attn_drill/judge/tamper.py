"""Find, and undo, what the user's code changed in the objects a verdict depends on.

The user's file runs in the checker's own process, so it can reach what the checker uses: replace
torch.allclose, a Tensor method, builtins.all, attn_drill's own compare.diff or Report.to_wire, the
reference's function, or torch's kernels underneath them all. The engine takes a `snapshot()` before the
file is imported and calls `changed_since()` after the import and after every call of user code: what
changed is put back where it can be, and the check fails with `torch-modified`, naming it. The worker does
it once more before it sends each report, with the two functions captured before any user code ran, so that
replacing the engine's guard does not help either. Watched:

- names in torch, torch.nn.functional, torch.linalg, torch.special, torch.testing, and on torch.Tensor,
  nn.Module and nn.Linear (replaced or removed; on classes also added: an added method hides torch's own);
- builtins, math, json (the report's encoder), dataclasses, and every module of attn_drill and the
  classes defined in them, with their entries in sys.modules;
- the reference modules (the model answers, loaded before any user code runs), their names and classes;
- the checker's own tables, changed in place: the dicts, lists and sets at the top of attn_drill's judge
  modules (the tolerances, the specs...) and the attributes of the objects in them (`TOL[torch.float64].atol`);
- torch's kernels: Python kernels registered for torch's own operators, aten and prims (torch.library's
  Library.impl, torch.library.impl, register_kernel; taken out again), after every call; the dispatcher's
  table for the operators the checker computes with, and a canary: a fixed small attention and comparison
  computed with plain torch ops before any user code runs (once per process), recomputed after the import
  and after the last stage: a kernel replaced in any other way that changes numbers shows there;
- torch's global state: the default dtype, grad mode, float32 matmul precision, function and dispatch modes
  left on (set_default_device is one), nn.Module's global hooks (they would run inside the reference too).
- Put back without blame: the recursion limit and the warnings filters.

torch changes itself too: a lazy import of torch._dynamo (torch.nn.attention.bias, torch.compile...) wraps
torch.manual_seed in a function of torch's own. A replacement made by torch's own code from the original
(its `__wrapped__` is the original, its code is in torch's files) is accepted, not blamed.

The audit hook (attn_drill/judge/audit.py) refuses what could never be undone here: a function's `__code__`
replaced, frames and the garbage collector reached from the user's code.

The limits: code that runs between the checks (a background thread) is seen only at the next check; changes
deep inside objects (a list inside a dict inside an object) are not seen; a kernel registered with the raw
dispatcher API (torch._C._dispatch_library) that changes no number of the canary and claims a file of torch's
own is not seen, and one that is seen cannot be taken out again (it stays for the rest of the process); code
that uses ctypes can still forge a verdict. Code that shares the checker's process can always lie to it; what
is covered here is every way of replacing a function that a user might try to make a comparison pass, and
every global setting a user might change by mistake.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import is_

import torch
import torch.nn.functional as F
import torch.testing
from torch.nn.modules import module as _nn_module
from torch.utils._python_dispatch import _pop_mode

from attn_drill.i18n import lang, t

_TORCH = {"torch": torch, "torch.nn.functional": F, "torch.linalg": torch.linalg, "torch.special": torch.special,
          "torch.testing": torch.testing, "torch.Tensor": torch.Tensor, "nn.Module": torch.nn.Module,
          "nn.Linear": torch.nn.Linear}
_STDLIB = ("builtins", "math", "json", "json.encoder", "json.decoder", "dataclasses")
_HOOKS = tuple(n for n in dir(_nn_module) if n.startswith("_global_") and isinstance(getattr(_nn_module, n), dict))
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# module-level tables the checker itself changes while it runs (never a verdict's input)
_OWN_STATE = {("attn_drill.judge.audit", "HITS"), ("attn_drill.judge.audit", "WORDS")}
# the operators whose dispatcher table is compared (the deep check): what the comparison and the references use
WATCHED_OPS = tuple(f"aten::{op}" for op in (
    "abs", "sub.Tensor", "add.Tensor", "mul.Tensor", "div.Tensor", "le.Tensor", "eq.Tensor", "bitwise_not",
    "any", "all", "max", "amax", "nan_to_num", "isfinite", "isclose", "allclose", "equal", "matmul", "bmm", "mm",
    "addmm", "_softmax", "masked_fill.Scalar", "where.self", "exp", "sum.dim_IntList", "linalg_vector_norm",
    "clamp_min", "copy_", "_to_copy", "_local_scalar_dense"))


@dataclass
class _Space:
    label: str
    obj: object  # a module or a class
    names: dict  # its attributes when the snapshot was taken
    watch_added: bool  # classes: a new attribute shadows an inherited one
    sep: str = "."


@dataclass
class _Table:
    label: str
    obj: object  # a dict, list or set, or an object whose attributes are watched
    items: object  # what it held: a dict for dicts and objects, a list for lists, a set of ids for sets


@dataclass
class Snapshot:
    spaces: list[_Space] = field(default_factory=list)
    tables: list[_Table] = field(default_factory=list)
    modules: dict = field(default_factory=dict)  # sys.modules entries of the watched modules
    state: dict = field(default_factory=dict)
    kernels: dict = field(default_factory=dict)  # torch.library's registries, the dispatcher's tables, the canary


def snapshot() -> Snapshot:
    """Everything a verdict depends on, as it is now, the loaded reference modules included. Adds the audit hook
    first, so that it is in place before any user code runs."""
    from attn_drill.judge import audit
    from attn_drill.judge.specs.base import REFERENCES

    kernels = _kernels(deep=True)  # first: the canary loads the sdpa reference
    audit.install()
    lang()  # the language is chosen now: wording what changed (said) must not change i18n's own state later
    # the references loaded so far: the caller loaded those its checks read (specs.base.needed), and one never
    # loaded is one the checked code cannot reach
    references = dict(REFERENCES)
    snap = Snapshot()
    for label, ns in _TORCH.items():
        snap.spaces.append(_Space(label, ns, dict(vars(ns)), isinstance(ns, type)))
    ours = [n for n in list(sys.modules) if n == "attn_drill" or n.startswith("attn_drill.")]
    for name in (*_STDLIB, *ours):
        mod = sys.modules.get(name)
        if mod is None:
            continue
        snap.modules[name] = mod
        _add_module(snap, name, mod, name)
        if name.startswith(("attn_drill.judge", "attn_drill.findings", "attn_drill.report")):
            _add_tables(snap, name, mod)
    for file, mod in references.items():
        _add_module(snap, f"reference/{file}", mod, mod.__name__, sep=":")
        _add_tables(snap, f"reference/{file}", mod)
    snap.state = _state()
    snap.kernels = kernels
    return snap


def _add_module(snap: Snapshot, label: str, mod, name: str, sep: str = ".") -> None:
    snap.spaces.append(_Space(label, mod, dict(vars(mod)), False, sep))
    for value in list(vars(mod).values()):
        if isinstance(value, type) and value.__module__ == name and name != "builtins":
            snap.spaces.append(_Space(f"{label}{sep}{value.__qualname__}", value, dict(vars(value)), True))


def _add_tables(snap: Snapshot, label: str, mod) -> None:
    """The module's top-level dicts, lists and sets, and the attributes of the checker's objects in them."""
    for key, value in list(vars(mod).items()):
        if key.startswith("__") or (mod.__name__, key) in _OWN_STATE:
            continue
        where = f"{label}.{key}"
        if type(value) in (dict, list, set):
            snap.tables.append(_Table(where, value, _items(value)))
            inner = value.items() if type(value) is dict else enumerate(value) if type(value) is list else ()
            for k, v in inner:
                if _ours(v):
                    snap.tables.append(_Table(f"{where}[{k!r}]", v, dict(vars(v))))
        elif _ours(value):
            snap.tables.append(_Table(where, value, dict(vars(value))))


def _ours(value) -> bool:
    """An instance (not a class, function or module) of a class of the checker's, with attributes of its own."""
    cls = type(value)
    return (cls.__module__.startswith(("attn_drill.", "attn_drill_reference_")) and not isinstance(value, type)
            and hasattr(value, "__dict__"))


def _items(value):
    if type(value) is dict:
        return dict(value)
    if type(value) is list:
        return list(value)
    return {id(v): v for v in value}


def _state() -> dict:
    return {"dtype": torch.get_default_dtype(), "grad": torch.is_grad_enabled(),
            "matmul": torch.get_float32_matmul_precision(),
            "function modes": torch._C._len_torch_function_stack(),
            "dispatch modes": torch._C._len_torch_dispatch_stack(),
            "hooks": {n: list(getattr(_nn_module, n)) for n in _HOOKS},
            "recursion": sys.getrecursionlimit(), "warnings": list(warnings.filters)}


def changed_since(snap: Snapshot, deep: bool = True) -> list[str]:
    """What was replaced, removed or switched since `snap`, in words; each is put back where it can be.
    `deep` also looks at the checker's tables, the dispatcher's tables and the canary (a few milliseconds: the
    engine asks for it after the import and at the end of a check, the worker before each report; after each
    call, the names, the global state and torch.library's registry are looked at)."""
    changed = []
    if not _unchanged(snap.spaces):
        for space in snap.spaces:
            changed += _restore_space(space)
    if deep:
        for table in snap.tables:
            changed += _restore_table(table)
    for name, mod in snap.modules.items():
        if sys.modules.get(name) is not mod:
            changed.append(f"sys.modules[{name!r}]")
            sys.modules[name] = mod
    changed += _restore_state(snap.state)
    return changed + _kernel_changes(snap.kernels, deep)


# The detecting functions below take the builtins they rely on as default arguments, bound when this module
# was imported: the user's code may replace builtins.all or builtins.len (that is one of the changes looked
# for), and a function's defaults cannot be reassigned under the audit hook.

def _unchanged(spaces: list[_Space], _all=all, _len=len, _map=map, _vars=vars, _is=is_, _chain=chain.from_iterable,
               _repeat=repeat, _missing=object()) -> bool:
    """Every watched name still bound to the very same object: one pass at C speed (a few thousand names)."""
    now = _chain(_map(_vars(s.obj).get, s.names, _repeat(_missing)) for s in spaces)
    then = _chain(s.names.values() for s in spaces)
    return _all(_map(_is, now, then)) and _all(_len(_vars(s.obj)) == _len(s.names) for s in spaces if s.watch_added)


def _restore_space(space: _Space, _vars=vars) -> list[str]:
    now = _vars(space.obj)
    changed = []
    for key, value in space.names.items():
        new = now.get(key, _MISSING)
        if new is not value:
            if _torch_own(value, new):
                space.names[key] = new  # torch's own wrapper of the original (torch._dynamo's, on its import)
                continue
            changed.append(f"{space.label}{space.sep}{key}")
            _put(setattr, space.obj, key, value)
    if space.watch_added:
        for key in [k for k in now if k not in space.names]:
            changed.append(f"{space.label}{space.sep}{key}")
            _put(delattr, space.obj, key)
    return changed


def _torch_own(old, new, _getattr=getattr, _any=any) -> bool:
    """A replacement torch made itself: a function of torch's own files that wraps the original."""
    code = _getattr(new, "__code__", None)
    if code is None or _getattr(new, "__wrapped__", None) is not old:
        return False
    cells = [c.cell_contents for c in (new.__closure__ or ()) if filled(c)]
    return code.co_filename.startswith(_TORCH_DIR) and _any(c is old for c in cells)


def filled(cell) -> bool:
    """Whether a closure cell holds a value (an empty one raises on reading)."""
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _restore_table(table: _Table, _type=type, _len=len, _all=all, _map=map, _is=is_, _id=id, _vars=vars,
                   _repeat=repeat, _missing=object()) -> list[str]:
    obj, was = table.obj, table.items
    if _type(obj) is dict:
        if _len(obj) == _len(was) and _all(_map(_is, _map(obj.get, was, _repeat(_missing)), was.values())):
            return []
        obj.clear()
        obj.update(was)
    elif _type(obj) is list:
        if _len(obj) == _len(was) and _all(_map(_is, obj, was)):
            return []
        obj[:] = was
    elif _type(obj) is set:
        if _len(obj) == _len(was) and _all(_id(v) in was for v in obj):
            return []
        obj.clear()
        obj.update(was.values())
    else:  # an object's attributes
        now = _vars(obj)
        keys = [k for k in set(now) | set(was) if now.get(k, _MISSING) is not was.get(k, _MISSING)]
        if not keys:
            return []
        for k in keys:
            if k in was:
                _put(object.__setattr__, obj, k, was[k])
            else:
                _put(object.__delattr__, obj, k)
        return [f"{table.label}.{k}" for k in sorted(keys)]
    return [said("in_place", label=table.label)]


def _put(how, *args) -> None:
    try:
        how(*args)
    except (AttributeError, TypeError):
        pass


def said(key: str, /, **params) -> str:
    """This module's sentence `key` (i18n/<lang>/evidence/core.toml, [tamper]). Only called once the names are
    put back (builtins and attn_drill's modules among them), so what the user's code replaced is not used."""
    return t(f"evidence.core.tamper.{key}", **params)


def _restore_state(before: dict) -> list[str]:
    changed = []
    if torch.get_default_dtype() != before["dtype"]:
        changed.append(said("default_dtype", dtype=torch.get_default_dtype()))
        torch.set_default_dtype(before["dtype"])
    if torch.is_grad_enabled() != before["grad"]:
        changed.append(said("grad_mode"))
        torch.set_grad_enabled(before["grad"])
    if torch.get_float32_matmul_precision() != before["matmul"]:
        changed.append(said("matmul_precision", precision=repr(torch.get_float32_matmul_precision())))
        torch.set_float32_matmul_precision(before["matmul"])
    if torch._C._len_torch_function_stack() > before["function modes"]:
        changed.append(said("function_modes"))
        while torch._C._len_torch_function_stack() > before["function modes"]:
            torch._C._pop_torch_function_stack()
    if torch._C._len_torch_dispatch_stack() > before["dispatch modes"]:
        changed.append(said("dispatch_modes"))
        while torch._C._len_torch_dispatch_stack() > before["dispatch modes"]:
            _pop_mode()
    for name, keys in before["hooks"].items():
        hooks = getattr(_nn_module, name)
        added = [k for k in hooks if k not in keys]
        if added:
            changed.append(said("global_hooks", hooks=name.strip('_')))
            for k in added:
                del hooks[k]
    sys.setrecursionlimit(before["recursion"])
    warnings.filters[:] = before["warnings"]
    warnings._filters_mutated()
    return changed


_MISSING = object()


# --- torch's kernels --------------------------------------------------------------------------------------

_BASELINE: dict = {}  # the dispatcher's tables and the canary, taken once per process, before any user code


def _kernels(deep: bool) -> dict:
    lib = torch.library
    out = {"impls": set(lib._impls), "defs": set(lib._defs)}
    if deep:
        if not _BASELINE:
            _BASELINE.update(tables=_tables(), canary=canary())
        out["tables"], out["canary"] = _BASELINE["tables"], _BASELINE["canary"]
    return out


def _tables() -> dict[str, str]:
    tables = {}
    for op in WATCHED_OPS:
        try:
            tables[op] = torch._C._dispatch_dump(op)
        except RuntimeError:  # an operator this torch does not have
            pass
    return tables


def _kernel_changes(before: dict, deep: bool) -> list[str]:
    changed = []
    lib = torch.library
    added = () if lib._impls == before["impls"] else lib._impls - before["impls"]
    defined = {d.split(".")[0] for d in lib._defs - before["defs"]} if added else set()
    for key in sorted(added):
        ns, op, dispatch_key = key.split("/")
        if ns not in ("aten", "prims") or f"{ns}::{op}".split(".")[0] in defined:
            before["impls"].add(key)  # torch registering its own operators (distributed, inductor...) lazily
            continue
        changed.append(said("kernel_library", key=dispatch_key, op=f"{ns}::{op}"))
        _unregister(key)
    if not deep:
        return changed
    if "tables" in before:
        now = _tables()
        for op, text in now.items():
            if text == before["tables"].get(op, text):
                continue
            foreign = [line for line in text.splitlines() if line not in before["tables"][op].splitlines()
                       and " registered at " in line and not _torch_file(line.split(" registered at ", 1)[1])]
            if foreign:
                key = foreign[0].split(":", 1)[0]
                changed.append(said("kernel_dispatcher", key=key, op=op))
            else:
                before["tables"][op] = text  # torch registering more of its own
    if canary() != before["canary"]:
        changed.append(said("canary"))
    return changed


def _torch_file(where: str) -> bool:
    """A registration of torch's own: from its Python files, or from its C++ sources (not a .py file at all)."""
    path = where.split(" :: ", 1)[0].rsplit(":", 1)[0].strip()
    return path.startswith(_TORCH_DIR) or not path.endswith(".py")


def _unregister(key: str) -> None:
    """Take a Python kernel out again: destroy the torch.library.Library objects that registered it."""
    import gc

    library = torch.library.Library
    for obj in gc.get_objects():
        if issubclass(type(obj), library) and key in obj._op_impls:
            try:
                obj._destroy()
            except Exception:  # noqa: BLE001 - best effort; the check fails anyway
                pass


def canary() -> bytes:
    """A fixed small attention, its gradient and the checker's comparison, computed with plain torch ops on
    fixed inputs, as bytes: any kernel that gives other numbers for them changes it. About a millisecond."""
    from attn_drill.judge.compare import TOL, closeness, diff, raw_bytes
    from attn_drill.judge.specs.base import reference_module

    f64 = torch.float64
    with torch.no_grad():
        base = torch.arange(60, dtype=f64).reshape(3, 4, 5)
        q = torch.sin(base * 0.37)
        k = torch.cos(base * 0.23 + 1.0)
        v = (base * 0.11).remainder(1.7) - 0.8
        mask = (base[0, :, :4] * 7).remainder(3) != 0  # (4, 4)
        scores = q[:, :, :4] @ k[:, :, :4].transpose(-2, -1) / 2.0
        scores = scores.masked_fill(~mask, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = w @ v[:, :, :4]
        ref_out, ref_w = reference_module("sdpa.py").scaled_dot_product_attention(q, k, v, mask)
        err = (out - ref_out[..., :4]).abs()
        flags = torch.stack([(err <= 1e-9 + 1e-9 * ref_out[..., :4].abs()).all(), (~mask).any(),
                             torch.isclose(w, ref_w).all(), torch.tensor(torch.allclose(out, out * (1 + 1e-3))),
                             torch.tensor(torch.equal(w, w.clone())), torch.isfinite(scores).all()])
        near = diff(out, out + 1e-3, TOL[f64])
        numbers = torch.stack([err.max(), torch.nan_to_num(scores, neginf=-7.0).sum(), w.norm(),
                               torch.exp(-w).sum(), (q * k).sum(-1).amax(), torch.linalg.vector_norm(v),
                               out.float().double().sum(), torch.tensor(closeness(out, ref_out[..., :4]), dtype=f64),
                               torch.tensor(near.max_abs + near.max_rel + float(near.ok),
                                            dtype=f64)])
    x = q.detach().clone().requires_grad_(True)
    (torch.softmax(x @ k.transpose(-2, -1), -1) @ v).pow(2).sum().backward()
    parts = [numbers, flags, w, out, x.grad]
    return b"".join(raw_bytes(t) for t in parts) + repr(near.index).encode()


# what callers hand `finding` in English (the engine, process/worker.py), by the key that words it there: after
# changed_since has put back what the user's code replaced, so that the words come from the checker's own code
_SAID = {"your code replaced": "replaced", "importing your file replaced": "import_replaced",
         "constructing your module replaced": "build_replaced", " (seen after the check ended)": "after_end"}


def finding(changed: list[str], what: str, after: str = ""):
    """The torch-modified finding for what changed_since found (and has already put back). `what` and `after`
    are one of _SAID's English phrases, worded here in the language in use, or words of the caller's."""
    from attn_drill import findings

    what, after = (said(_SAID[x]) if x in _SAID else x for x in (what, after))
    return findings.make("torch-modified", said("evidence", what=what, changed=said("sep").join(changed[:5]),
                                                after=after), score=2.0)
