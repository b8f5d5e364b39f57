"""One traced call of the user's code, and what came back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from attn_drill.judge.specs.base import Case
from attn_drill.judge.trace import Tracer


@dataclass
class Outcome:
    case: Case
    result: object = None  # what the user's code returned
    error: BaseException | None = None
    tracer: Tracer | None = None
    module: object = None
    inputs: dict = field(default_factory=dict)
    outputs: tuple | None = None  # the result as the spec's flat tuple of tensors; None when it is not one
    dtype: torch.dtype = torch.float64  # what the call was given
    device: str = "cpu"


def run(spec, target, case: Case, path: Path, dtype=torch.float64, grad=False, device="cpu", record=None,
        moves: bool = False) -> Outcome:
    """Call the user's code on one case under a tracer (`record`: its hook for every call, see Tracer); never
    raises. `moves`: on the CPU, follow the tensors made with no device= as on another device, counting the moves
    asked for (Tracer.moves_named)."""
    tracer = Tracer(path, spec.forbidden, record=record)
    tracer.precision = dtype if dtype == torch.float64 else None
    tracer.follow = str(device) != "cpu" or moves
    tracer.moves_named = moves
    out = Outcome(case, tracer=tracer, dtype=dtype, device=str(device))
    try:
        kwargs = {}
        if hasattr(spec, "build"):  # a module: build it first (its layers are made on the CPU, then moved)
            build_tracer = Tracer(path, spec.forbidden)
            build_tracer.follow, build_tracer.moves_named = tracer.follow, tracer.moves_named
            with build_tracer:
                kwargs["module"], bad = spec.build(target, case, dtype, device)
            tracer.forbidden_calls += build_tracer.forbidden_calls
            if bad:
                raise RuntimeError(bad.evidence)
            if str(device) != "cpu" and isinstance(kwargs["module"], torch.nn.Module):
                try:
                    tracer.adopt(build_tracer, kwargs["module"], torch.device(device).type)
                except Exception:  # noqa: BLE001 - what adopt finds only sharpens a guess; never the user's error
                    pass
        with tracer, torch.set_grad_enabled(grad):
            out.result, out.module, out.inputs = spec.call(target, case, dtype, device=device, grad=grad, **kwargs)
    except BaseException as e:  # noqa: BLE001 - user code may raise anything, KeyboardInterrupt and SystemExit too
        out.error = e  # (the worker runs in its own session: a Ctrl-C at the terminal never reaches it)
        return out
    out.outputs = spec.unpack(out.result)
    if out.outputs is not None and any(type(t) is not torch.Tensor for t in out.outputs):
        out.outputs = None  # a Tensor subclass can override __torch_function__ and make any comparison pass
    elif grad and out.outputs is not None:
        tracer.forbidden_calls += forbidden_in_graph(out.outputs, spec.forbidden)
    return out


def forbidden_in_graph(outputs, forbidden: dict, limit: int = 20_000) -> list[tuple[str, None]]:
    """Forbidden built-ins found in the autograd graph behind the outputs (SoftmaxBackward0, ...). Code that
    hides a call from torch's function mode (DisableTorchFunction, popped modes) still leaves its node there."""
    keys = {k.replace("_", "").lower(): what for k, what in forbidden.items() if not k.startswith("=")}
    todo = [t.grad_fn for t in outputs if t.grad_fn is not None]
    seen, found = set(), []
    while todo and len(seen) < limit:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        name = type(node).__name__.lower()
        found += [(what, None) for key, what in keys.items() if key in name and (what, None) not in found]
        todo += [nxt for nxt, _ in node.next_functions]
    return found
