"""The later stages' probes: return type, empty rows, inputs written in place, gradients, dtypes, device."""

from __future__ import annotations

import torch

from attn_drill import findings
from attn_drill.judge import calls, load
from attn_drill.judge.compare import TOL, diff, where
from attn_drill.report import FAIL, PASS, WARN


def return_type(spec, o: calls.Outcome):
    r = o.result
    if o.outputs is not None:
        return None
    if isinstance(r, torch.Tensor):
        kind = "a bare tensor" if len(spec.outputs) > 1 else "a tensor"
        got = f"{kind} of shape {tuple(r.shape)} and dtype {str(r.dtype).replace('torch.', '')}"
    elif isinstance(r, (tuple, list)):
        got = f"a {type(r).__name__} of {len(r)}: " + ", ".join(type(t).__name__ for t in r)
    else:
        got = "None" if r is None else f"a {type(r).__module__}.{type(r).__name__}"
    name = o.case.config.get("fn", spec.name)  # masks: one file, three functions
    return findings.make("wrong-return-type", f"returned {got} ({o.case.label})", score=1.5,
                         name=name, expected=spec.expected_return())


def elsewhere(spec, o: calls.Outcome):
    """An output on the meta device for a call on a real one: it holds no numbers, so nothing can be compared.
    (The device stage, on meta, sees the opposite: an output that stays on the CPU, a warning.)"""
    if o.device == "meta":
        return None
    for name, t in zip(spec.outputs, o.outputs):
        if t.device.type == "meta":
            calls_ = [line for _, line in (o.tracer.calls if o.tracer else []) if line is not None]
            line = calls_[-1] if calls_ else None
            return findings.make(
                "wrong-return-type", f"{name} comes back on the meta device for inputs on the {o.device} device "
                f"({o.case.label}): a meta tensor has a shape but no numbers, so there is nothing to compare",
                line=line, score=1.5, name=o.case.config.get("fn", spec.name),
                expected=f"{spec.expected_return()}, on the inputs' device")
    return None


def new_values(check):
    """The first case again with new values of the same shapes: an answer that follows its inputs follows
    them here too. One remembered per shape (a cache keyed by shapes, dtype or device, fresh copies or not)
    gives back the old answer, which the cases alone never show: no two of them share their shapes."""
    from attn_drill.judge.specs.base import Case

    case = check.cases[0]
    gen = torch.Generator().manual_seed(check.seed + 1)
    floats = {n: torch.randn(t.shape, generator=gen, dtype=t.dtype) if t is not None and t.is_floating_point() else t
              for n, t in case.inputs.items()}
    if not any(t is not None and t.is_floating_point() for t in case.inputs.values()):
        return None  # integers only (masks): the same shapes are the same arguments
    again = Case(case.label + ", new values", floats, case.dims, case.config, case.params)
    o = calls.run(check.spec, check.target, again, check.path)
    check.guard(o)
    ref = check.spec.unpack(check.spec.reference(again)[0])
    if o.error is not None or o.outputs is None:
        return None  # raising here and not before is another story, told by the stages that follow
    for name, got, want in zip(check.spec.outputs, o.outputs, ref):
        d = diff(got, want, TOL[torch.float64])
        if not d.ok:
            old = check.outcomes[0].outputs[check.spec.outputs.index(name)]
            same = tuple(got.shape) == tuple(old.shape) and bool(torch.equal(got.detach().cpu(), old.detach().cpu()))
            what = "exactly what it returned for the first inputs" if same else "no longer the right answer"
            return findings.make(
                "output-reused", f"given new values of the same shapes ({again.label}), your {name} is {what}: "
                f"it differs first at ({where(d.index, check.spec.axes[name])}), yours {d.got:.4g}, expected "
                f"{d.want:.4g}. An answer kept from an earlier call (a cache keyed by shapes) was returned",
                score=2.0)
    return None


def empty_row(check):
    """A query that sees no key may give zeros, uniform weights or NaN; NaN earns a warning."""
    spec = check.spec
    case = spec.empty_row_case(torch.Generator().manual_seed(check.seed))
    if case is None:
        return None
    o = calls.run(spec, check.target, case, check.path)
    check.guard(o)
    if o.outputs is None:
        return None
    if any(not bool(torch.isfinite(t).all()) for t in o.outputs):
        return findings.make("nan-on-empty-row", f"NaN in the output for the query with no visible key ({case.label})",
                             score=1.0)
    return None


def inputs_modified(check, failed: bool):
    """Inputs written in place by the user's code (the checker hands it copies, so it can tell).

    In self-attention one tensor is query, key and value at once: writing into it changes the keys too.
    When the only failing cases are such ones, the write is the mistake, and an error."""
    for o in check.outcomes:
        for name, given in o.inputs.items():
            original = o.case.inputs.get(name)
            if isinstance(given, torch.Tensor) and original is not None and not torch.equal(given, original):
                evidence = f"{name} changed during the call ({o.case.label})"
                bad = [c for c, r in zip(check.outcomes, check.refs) if not _matches(c, r)]
                if failed and bad and all(_aliased(c) for c in bad):
                    return findings.make(
                        "input-modified", evidence + "; the cases that fail are exactly those where query, key and "
                        "value are one tensor (self-attention), so the write changed the keys and values too",
                        score=1.2, level="error")
                return findings.make("input-modified", evidence, score=1.0)
    return None


def _aliased(o) -> bool:
    x = list(o.case.inputs.values())
    return any(a is not None and any(a is b for b in x[i + 1:]) for i, a in enumerate(x))


def _matches(o, ref) -> bool:
    return o.outputs is not None and all(diff(a, b, TOL[torch.float64]).ok for a, b in zip(o.outputs, ref))


def _loss_weights(outputs, seed):
    gen = torch.Generator().manual_seed(seed + 1)
    return [torch.randn(t.shape, generator=gen, dtype=torch.float64) for t in outputs]


def gradients(check):
    """backward runs, and every input and parameter gets the reference's gradient."""
    spec, case = check.spec, check.cases[0]
    if not spec.differentiable:
        return PASS, "not applicable: the outputs are booleans"
    if getattr(spec, "no_gradients", None):
        return PASS, spec.no_gradients
    o = calls.run(spec, check.target, case, check.path, grad=True)
    check.guard(o)
    ref, ref_module, ref_x = spec.reference(case, grad=True)
    ref = spec.unpack(ref)
    check.keep_reference(ref or (), case)
    if o.outputs is None:
        return _grad_warning(check, f"the call with gradients on raised {load.describe(o.error)}" if o.error
                             else "the call with gradients on returned something else", o, o.error)
    gs = _loss_weights(ref, check.seed)
    try:
        loss = sum((t.double() * g).sum() for t, g in zip(o.outputs, gs))
        loss.backward()
    except BaseException as e:  # noqa: BLE001
        return _grad_warning(check, f"backward raised {load.describe(e)}", o, e)
    sum((t * g).sum() for t, g in zip(ref, gs)).backward()
    mine, want = spec.grad_inputs(o.inputs, o.module), spec.grad_inputs(ref_x, ref_module)
    for name, tensor in mine.items():
        if tensor.grad is None:
            return _grad_warning(check, f"{name} gets no gradient ({case.label})", o)
        d = diff(tensor.grad, want[name].grad, TOL[torch.float64])
        if not d.ok:
            return _grad_warning(check, f"the gradient of {name} differs: max abs error {d.max_abs:.3g} ({case.label})", o)
    said = ", ".join(mine)
    if len(mine) > 10:  # a layer's dozens of parameters: counted, not listed
        inputs = [n for n in mine if n in getattr(spec, "grad_names", ())]
        said = f"{', '.join(inputs)} and {len(mine) - len(inputs)} parameters"
    return PASS, f"backward runs; the gradients of {said} match"


def _grad_warning(check, evidence, o, exc=None):
    line = load.user_line(exc, check.path)[0] if exc else None
    check.add(findings.make("backward-fails", evidence, line=line, score=1.0))
    return WARN, evidence


DTYPES = (torch.float32, torch.float16, torch.bfloat16)  # what a GPU user trains in


def dtypes(check):
    if not check.spec.float_inputs:
        return PASS, "not applicable: the inputs are integers"
    return in_dtypes(check, DTYPES)


def in_dtypes(check, dtypes, device: str = "cpu", on: str = ""):
    """The first case in each of `dtypes` on `device` against the reference in that dtype, with that dtype's
    tolerance; `on` names the device in every sentence (" on CUDA"). (status, detail)."""
    spec, case = check.spec, check.cases[0]
    notes, warned = [], False
    for dtype in dtypes:
        label = str(dtype).replace("torch.", "") + on
        o = calls.run(spec, check.target, case, check.path, dtype=dtype, device=device)
        check.guard(o)
        if device != "cpu":
            found = _device_finding(check, o, torch.device(device).type, guess=False)
            if found:
                check.add(found)
                return FAIL, found.evidence
        if o.error is not None:
            msg = str(o.error)
            if "overflow" in msg and dtype == torch.float16:
                check.add(findings.make("mask-fill-overflow", f"in {label}: {load.describe(o.error)}",
                                        line=load.user_line(o.error, check.path)[0], score=1.0))
                warned = True
                notes.append(f"{label}: raised (overflow)")
                continue
            check.add(load.exception_finding(o.error, check.path, f"in {label} ({case.label})", score=1.0))
            return FAIL, f"{label}: raised {load.describe(o.error)}"
        if o.outputs is None:
            check.add(return_type(spec, o))
            return FAIL, f"{label}: wrong return type"
        ref = spec.unpack(spec.reference(case, dtype)[0])
        check.keep_reference(ref, case, dtype)
        for name, got, want in zip(spec.outputs, o.outputs, ref):
            if spec.float_inputs and got.dtype != dtype:
                check.add(findings.make("dtype-not-preserved", f"{name} is {str(got.dtype).replace('torch.', '')} "
                                        f"for {label} inputs", score=1.0, expected=str(dtype).replace("torch.", "")))
                warned = True
            if not bool(torch.isfinite(got).all()) and bool(torch.isfinite(want).all()):
                check.add(findings.make("nan-output", f"{name} has NaN or inf in {label} ({case.label})", score=1.0))
                return FAIL, f"{label}: NaN or inf in {name}"
            tol = TOL.get(dtype, TOL[torch.float32])
            d = diff(got, want, tol)
            if not d.ok:
                check.add(findings.make(
                    "values-mismatch", f"in {label}, {name} differs at ({where(d.index, spec.axes[name])}): yours "
                    f"{d.got:.4g}, expected {d.want:.4g} (max abs error {d.max_abs:.3g}, tolerance {tol.atol:g})",
                    score=0.5))
                return FAIL, f"{label}: {name} out of tolerance"
        notes.append(f"{label}: ok")
    return (WARN if warned else PASS), "; ".join(notes)


def device(check):
    """Run the first case on the meta device: tensors with shapes and devices but no numbers. A tensor the code
    makes on the default device (no device=) then meets the meta inputs and raises, or an output comes back
    elsewhere: on a GPU the same code would fail the same way. Where a GPU is present, the runner runs the
    code there too, in a process of its own (on_gpu, below, and process/gpu.py)."""
    spec, case = check.spec, check.cases[0]
    if getattr(spec, "meta_run", True):
        o = calls.run(spec, check.target, case, check.path, dtype=torch.float32, device="meta")
        check.guard(o)
        found = _device_finding(check, o, "meta")
        if found:
            check.add(found)
            return WARN, found.evidence
        note = ("every tensor your code makes follows the inputs' device (run on the meta device)" if o.error is None
                else f"the meta device cannot run your code ({load.describe(o.error)}): not a mistake, nothing to see")
    else:  # code that reads tensors' values (lengths) cannot run there at all: the contract skips it
        note = "not run on the meta device: this exercise reads tensors' values (lengths)"
    return PASS, note


READS = {"tolist", "item", "numpy", "__int__", "__float__", "__bool__", "__index__", "__len__", "__iter__"}


def _device_finding(check, o: calls.Outcome, dev: str, guess: bool = True):
    """device-mismatch when the run raised about devices or returned a tensor on another device; with `guess`
    (on the meta device), also when a tensor made on the CPU was never moved: a real GPU says for itself."""
    made = o.tracer.off_device if o.tracer else []
    said = f"; torch.{made[0][0]}(...) at your line {made[0][1]} makes a tensor with no device=" if made else ""
    if o.error is not None:
        msg = str(o.error)
        # "copy out of meta": a meta tensor written into one made on the CPU (on a GPU that copy succeeds and
        # the result stays on the CPU) -- unless the code only read values out (.tolist(), .item()), fine on a GPU
        last = o.tracer.calls[-1][0] if o.tracer and o.tracer.calls else ""
        copied = "copy out of meta" in msg and last not in READS
        if "device" not in msg.lower() and not copied:
            return None  # e.g. .item() on meta: the meta device cannot run it, which says nothing about devices
        line = load.user_line(o.error, check.path)[0] or (made[0][1] if made else None)
        return findings.make("device-mismatch", f"with inputs on the {dev} device: {load.describe(o.error)}{said}",
                             line=line, score=1.0)
    if o.outputs is None:
        return None
    for name, t in zip(check.spec.outputs, o.outputs):
        if t.device.type != dev:
            return findings.make("device-mismatch", f"with inputs on the {dev} device, {name} comes back on "
                                 f"{t.device.type}{said}", line=made[0][1] if made else None, score=1.0)
    if made and guess:  # matmul, einsum and indexing accept a CPU operand on meta; on a GPU most of them raise
        op, line = made[0]
        return findings.make("device-mismatch", f"with inputs on the {dev} device, torch.{op}(...) at your line "
                             f"{line} still makes its tensor on the CPU (no device=), and it is never moved",
                             line=line, score=1.0)
    return None


def on_gpu(check, device: str, name: str):
    """The device stage on a GPU: the first case on `device` in float32 and the half types (float32 alone for
    integer inputs), each against the reference in that dtype. `name` names the device in the detail."""
    dtypes = DTYPES if check.spec.float_inputs else (torch.float32,)
    status, detail = in_dtypes(check, dtypes, device, on=f" on {name}")
    if status == PASS:
        names = [str(d).replace("torch.", "") for d in dtypes]
        said = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return PASS, f"it runs on {name} in {said} and matches"
    return status, detail
