"""Find, and undo, what the user's code changed in the objects a verdict depends on.

The user's file runs in the checker's own process, so it can reach what the checker uses: replace
torch.allclose, a Tensor method, builtins.all, attn_drill's own compare.diff or Report.to_wire. The
engine takes a `snapshot()` before the file is imported and calls `changed_since()` after the import
and after every call of user code: what changed is put back and the check fails with `torch-modified`,
naming it. The worker does it once more before it sends each report, with the two functions captured
before any user code ran, so that replacing the engine's guard does not help either. Watched:

- names in torch, torch.nn.functional, torch.linalg, torch.special, torch.testing, and on torch.Tensor,
  nn.Module and nn.Linear (replaced or removed; on classes also added: an added method hides torch's own);
- builtins, math, json (the report's encoder), dataclasses, and every module of attn_drill and the
  classes defined in them, with their entries in sys.modules;
- torch's global state: the default dtype, grad mode, function and dispatch modes left on
  (set_default_device is one), nn.Module's global hooks (they would run inside the reference too).
- Put back without blame: the recursion limit and the warnings filters.

The limits: changes inside objects (a dict or list mutated in place, an attribute of an instance) and
code that runs between the checks (a background thread) are not seen, and code that uses ctypes or gc,
patches this module's own functions, or writes into the worker's report channel can still forge a
verdict. Code that shares the checker's process can always lie to it; what is covered here is every
way of replacing a function that a user might try to make a comparison pass, and every global setting
a user might change by mistake.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
import torch.testing
from torch.nn.modules import module as _nn_module
from torch.utils._python_dispatch import _pop_mode

_TORCH = {"torch": torch, "torch.nn.functional": F, "torch.linalg": torch.linalg, "torch.special": torch.special,
          "torch.testing": torch.testing, "torch.Tensor": torch.Tensor, "nn.Module": torch.nn.Module,
          "nn.Linear": torch.nn.Linear}
_STDLIB = ("builtins", "math", "json", "json.encoder", "json.decoder", "dataclasses")
_HOOKS = tuple(n for n in dir(_nn_module) if n.startswith("_global_") and isinstance(getattr(_nn_module, n), dict))


@dataclass
class _Space:
    label: str
    obj: object  # a module or a class
    names: dict  # its attributes when the snapshot was taken
    watch_added: bool  # classes: a new attribute shadows an inherited one


@dataclass
class Snapshot:
    spaces: list[_Space] = field(default_factory=list)
    modules: dict = field(default_factory=dict)  # sys.modules entries of the watched modules
    state: dict = field(default_factory=dict)


def snapshot() -> Snapshot:
    snap = Snapshot()
    for label, ns in _TORCH.items():
        snap.spaces.append(_Space(label, ns, dict(vars(ns)), isinstance(ns, type)))
    ours = [n for n in list(sys.modules) if n == "attn_drill" or n.startswith("attn_drill.")]
    for name in (*_STDLIB, *ours):
        mod = sys.modules.get(name)
        if mod is None:
            continue
        snap.modules[name] = mod
        snap.spaces.append(_Space(name, mod, dict(vars(mod)), False))
        for value in list(vars(mod).values()):
            if isinstance(value, type) and value.__module__ == name and name != "builtins":
                snap.spaces.append(_Space(f"{name}.{value.__qualname__}", value, dict(vars(value)), True))
    snap.state = _state()
    return snap


def _state() -> dict:
    return {"dtype": torch.get_default_dtype(), "grad": torch.is_grad_enabled(),
            "function modes": torch._C._len_torch_function_stack(),
            "dispatch modes": torch._C._len_torch_dispatch_stack(),
            "hooks": {n: list(getattr(_nn_module, n)) for n in _HOOKS},
            "recursion": sys.getrecursionlimit(), "warnings": list(warnings.filters)}


def changed_since(snap: Snapshot) -> list[str]:
    """What was replaced, removed or switched since `snap`, in words; each is put back."""
    changed = []
    for space in snap.spaces:
        changed += _restore_space(space)
    for name, mod in snap.modules.items():
        if sys.modules.get(name) is not mod:
            changed.append(f"sys.modules[{name!r}]")
            sys.modules[name] = mod
    return changed + _restore_state(snap.state)


def _restore_space(space: _Space) -> list[str]:
    changed = []
    now = vars(space.obj)
    for key, value in space.names.items():
        new = now.get(key, _MISSING)
        if new is not value:
            changed.append(f"{space.label}.{key}")
            _put(setattr, space.obj, key, value)
    if space.watch_added:
        for key in [k for k in now if k not in space.names]:
            changed.append(f"{space.label}.{key}")
            _put(delattr, space.obj, key)
    return changed


def _put(how, *args) -> None:
    try:
        how(*args)
    except (AttributeError, TypeError):
        pass


def _restore_state(before: dict) -> list[str]:
    changed = []
    if torch.get_default_dtype() != before["dtype"]:
        changed.append(f"the default dtype (now {torch.get_default_dtype()}, by torch.set_default_dtype)")
        torch.set_default_dtype(before["dtype"])
    if torch.is_grad_enabled() != before["grad"]:
        changed.append("grad mode (switched globally, e.g. torch.set_grad_enabled(False) at the top level)")
        torch.set_grad_enabled(before["grad"])
    if torch._C._len_torch_function_stack() > before["function modes"]:
        changed.append("torch's function modes (a TorchFunctionMode or torch.set_default_device left on)")
        while torch._C._len_torch_function_stack() > before["function modes"]:
            torch._C._pop_torch_function_stack()
    if torch._C._len_torch_dispatch_stack() > before["dispatch modes"]:
        changed.append("torch's dispatch modes (a TorchDispatchMode left on)")
        while torch._C._len_torch_dispatch_stack() > before["dispatch modes"]:
            _pop_mode()
    for name, keys in before["hooks"].items():
        hooks = getattr(_nn_module, name)
        added = [k for k in hooks if k not in keys]
        if added:
            changed.append(f"nn.Module's global hooks ({name.strip('_')})")
            for k in added:
                del hooks[k]
    sys.setrecursionlimit(before["recursion"])
    warnings.filters[:] = before["warnings"]
    warnings._filters_mutated()
    return changed


_MISSING = object()


def finding(changed: list[str], what: str, after: str = ""):
    """The torch-modified finding for what changed_since found (and has already put back)."""
    from attn_drill import findings

    return findings.make("torch-modified", f"{what} " + ", ".join(changed[:5]) + after, score=2.0)
