"""The later stages' probes: return type, empty rows, inputs written in place, gradients, dtypes, device."""

from __future__ import annotations

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import calls, load
from attn_drill.judge.compare import TOL, diff, where
from attn_drill.judge.trace import READS
from attn_drill.report import FAIL, PASS, WARN


def _say(key: str, /, **params) -> str:
    """This module's sentence `key` (i18n/<lang>/evidence/core.toml, [probes_generic])."""
    return t(f"evidence.core.probes_generic.{key}", **params)


def return_type(spec, o: calls.Outcome):
    r = o.result
    if o.outputs is not None:
        return None
    if isinstance(r, torch.Tensor):
        got = _say("bare_tensor" if len(spec.outputs) > 1 else "tensor", shape=tuple(r.shape),
                   dtype=str(r.dtype).replace('torch.', ''))
    elif isinstance(r, (tuple, list)):
        got = _say("sequence", type=type(r).__name__, n=len(r), types=_say("sep").join(type(x).__name__ for x in r))
    else:
        got = "None" if r is None else _say("object", type=f"{type(r).__module__}.{type(r).__name__}")
    name = o.case.config.get("fn", spec.name)  # masks: one file, three functions
    return findings.make("wrong-return-type", _say("returned", got=got, case=o.case.label), score=1.5,
                         name=name, expected=spec.expected_return())


def elsewhere(spec, o: calls.Outcome):
    """An output on the meta device for a call on a real one: it holds no numbers, so nothing can be compared.
    (The device stage, on meta, sees the opposite: an output that stays on the CPU, a warning.)"""
    if o.device == "meta":
        return None
    for name, out in zip(spec.outputs, o.outputs):
        if out.device.type == "meta":
            calls_ = [line for _, line in (o.tracer.calls if o.tracer else []) if line is not None]
            line = calls_[-1] if calls_ else None
            return findings.make(
                "wrong-return-type", _say("on_meta", name=name, device=o.device, case=o.case.label),
                line=line, score=1.5, name=o.case.config.get("fn", spec.name),
                expected=_say("on_inputs_device", expected=spec.expected_return()))
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
    again = Case(_say("new_values", case=case.label), floats, case.dims, case.config, case.params)
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
            what = _say("same_as_before") if same else _say("no_longer_right")
            return findings.make(
                "output-reused", _say("stale", case=again.label, name=name, what=what,
                                      at=where(d.index, check.spec.axes[name]), got=d.got, want=d.want),
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
        return findings.make("nan-on-empty-row", _say("empty_row_nan", case=case.label), score=1.0)
    return None


def inputs_modified(check, failed: bool):
    """Inputs written in place by the user's code (the checker hands it copies, so it can tell).

    In self-attention one tensor is query, key and value at once: writing into it changes the keys too.
    When the only failing cases are such ones, the write is the mistake, and an error."""
    for o in check.outcomes:
        for name, given in o.inputs.items():
            original = o.case.inputs.get(name)
            if isinstance(given, torch.Tensor) and original is not None and not torch.equal(given, original):
                evidence = _say("input_changed", name=name, case=o.case.label)
                bad = [c for c, r in zip(check.outcomes, check.refs) if not _matches(c, r)]
                if failed and bad and all(_aliased(c) for c in bad):
                    return findings.make("input-modified", _say("input_aliased", evidence=evidence), score=1.2,
                                         level="error")
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
        return PASS, _say("booleans")
    if getattr(spec, "no_gradients", None):
        return PASS, spec.no_gradients
    o = calls.run(spec, check.target, case, check.path, grad=True)
    check.guard(o)
    ref, ref_module, ref_x = spec.reference(case, grad=True)
    ref = spec.unpack(ref)
    check.keep_reference(ref or (), case)
    if o.outputs is None:
        return _grad_warning(check, _say("grad_call_raised", error=load.describe(o.error)) if o.error
                             else _say("grad_call_returned"), o, o.error)
    gs = _loss_weights(ref, check.seed)
    try:
        loss = sum((t.double() * g).sum() for t, g in zip(o.outputs, gs))
        loss.backward()
    except BaseException as e:  # noqa: BLE001
        return _grad_warning(check, _say("backward_raised", error=load.describe(e)), o, e)
    sum((t * g).sum() for t, g in zip(ref, gs)).backward()
    mine, want = spec.grad_inputs(o.inputs, o.module), spec.grad_inputs(ref_x, ref_module)
    for name, tensor in mine.items():
        if tensor.grad is None:
            return _grad_warning(check, _say("no_gradient", name=name, case=case.label), o)
        d = diff(tensor.grad, want[name].grad, TOL[torch.float64])
        if not d.ok:
            return _grad_warning(check, _say("gradient_differs", name=name, abs=d.max_abs, case=case.label), o)
    said = _say("sep").join(mine)
    if len(mine) > 10:  # a layer's dozens of parameters: counted, not listed
        inputs = [n for n in mine if n in getattr(spec, "grad_names", ())]
        said = _say("and_parameters", inputs=_say("sep").join(inputs), n=len(mine) - len(inputs))
    return PASS, _say("gradients_match", said=said)


def _grad_warning(check, evidence, o, exc=None):
    line = load.user_line(exc, check.path)[0] if exc else None
    check.add(findings.make("backward-fails", evidence, line=line, score=1.0))
    return WARN, evidence


DTYPES = (torch.float32, torch.float16, torch.bfloat16)  # what a GPU user trains in


def dtypes(check):
    if not check.spec.float_inputs:
        return PASS, _say("integers")
    return in_dtypes(check, DTYPES)


def in_dtypes(check, dtypes, device: str = "cpu", on: str = "", case=None):
    """`case` (the first by default) in each of `dtypes` on `device` against the reference in that dtype, with
    that dtype's tolerance; `on` names the device in every sentence (" on CUDA"). (status, detail)."""
    spec, case = check.spec, case or check.cases[0]
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
                check.add(findings.make("mask-fill-overflow", _say("in_dtype", label=label,
                                                                   error=load.describe(o.error)),
                                        line=load.user_line(o.error, check.path)[0], score=1.0))
                warned = True
                notes.append(_say("overflowed", label=label))
                continue
            check.add(load.exception_finding(o.error, check.path, _say("when_in", label=label, case=case.label),
                                             score=1.0))
            return FAIL, _say("dtype_raised", label=label, error=load.describe(o.error))
        if o.outputs is None:
            check.add(return_type(spec, o))
            return FAIL, _say("wrong_return", label=label)
        ref = spec.unpack(spec.reference(case, dtype)[0])
        check.keep_reference(ref, case, dtype)
        for name, got, want in zip(spec.outputs, o.outputs, ref):
            if spec.float_inputs and got.dtype != dtype:
                check.add(findings.make("dtype-not-preserved", _say("dtype_changed", name=name, label=label,
                                                                    dtype=str(got.dtype).replace('torch.', '')),
                                        score=1.0, expected=str(dtype).replace("torch.", "")))
                warned = True
            if not bool(torch.isfinite(got).all()) and bool(torch.isfinite(want).all()):
                check.add(findings.make("nan-output", _say("nan_in", name=name, label=label, case=case.label),
                                        score=1.0))
                return FAIL, _say("nan_detail", label=label, name=name)
            tol = TOL.get(dtype, TOL[torch.float32])
            d = diff(got, want, tol)
            if not d.ok:
                check.add(findings.make(
                    "values-mismatch", _say("dtype_differs", label=label, name=name, at=where(d.index, spec.axes[name]),
                                            got=d.got, want=d.want, abs=d.max_abs, atol=tol.atol),
                    score=0.5))
                return FAIL, _say("out_of_tolerance", label=label, name=name)
        notes.append(_say("dtype_ok", label=label))
    return (WARN if warned else PASS), _say("notes_sep").join(notes)


def device(check):
    """Run the first case on the meta device: tensors with shapes and devices but no numbers. A tensor the code
    makes on the default device (no device=) then meets the meta inputs and raises, or an output comes back
    elsewhere: on a GPU the same code would fail the same way. Where a GPU is present, the runner runs the
    code there too, in a process of its own (on_gpu, below, and process/gpu.py)."""
    spec = check.spec
    if getattr(spec, "meta_run", True):
        for case in _shapes_of_call(check.cases):
            o = calls.run(spec, check.target, case, check.path, dtype=torch.float32, device="meta")
            check.guard(o)
            found = _device_finding(check, o, "meta")
            if found:
                if case is not check.cases[0]:  # another way of calling showed it: say which
                    found.evidence += _say("in_case", case=case.label)
                check.add(found)
                return WARN, found.evidence
            if o.error is not None:
                break
        note = (_say("follows_device") if o.error is None
                else _say("meta_cannot_run", error=load.describe(o.error)))
    else:  # code that reads tensors' values (lengths) cannot run there at all (the contract skips it): a trace on
        # the CPU still sees a tensor made with no device= that is never moved, nor anything made of it
        o = calls.run(spec, check.target, check.cases[0], check.path, dtype=torch.float32, moves=True)
        check.guard(o)
        made = o.tracer.off_device if o.tracer is not None and o.error is None else []
        if made:
            op, line = made[0]
            found = findings.make("device-mismatch", _say("never_moved_traced", op=op, line=line), line=line,
                                  score=1.2)
            check.add(found)
            return WARN, found.evidence
        note = _say("meta_skipped")
    return PASS, note


def _shapes_of_call(cases: list) -> list:
    """The first case, and the first of each other way of calling (an optional input given in one and None in
    another: sdpa with and without a mask), since code that builds a default for a missing input (a mask of ones)
    makes that tensor only when it is missing."""
    seen, out = set(), []
    for case in cases:
        missing = tuple(sorted(k for k, v in case.inputs.items() if v is None))
        if missing not in seen:
            seen.add(missing)
            out.append(case)
    return out




def _device_finding(check, o: calls.Outcome, dev: str, guess: bool = True):
    """device-mismatch when the run raised about devices or returned a tensor on another device; with `guess`
    (on the meta device), also when a tensor made on the CPU was never moved: a real GPU says for itself."""
    made = o.tracer.off_device if o.tracer else []
    said = _say("no_device", op=made[0][0], line=made[0][1]) if made else ""
    if o.error is not None:
        msg = str(o.error)
        # "copy out of meta": a meta tensor written into one made on the CPU (on a GPU that copy succeeds and
        # the result stays on the CPU) -- unless the code only read values out (.tolist(), .item()), fine on a GPU
        last = o.tracer.calls[-1][0] if o.tracer and o.tracer.calls else ""
        copied = "copy out of meta" in msg and last not in READS
        if "device" not in msg.lower() and not copied:
            return None  # e.g. .item() on meta: the meta device cannot run it, which says nothing about devices
        # the line that made the tensor on the wrong device, where the tracer saw it; else where the run raised
        line = made[0][1] if made else load.user_line(o.error, check.path)[0]
        # score 1.5: a run that raised or came back elsewhere is certain, ahead of warnings that are only possible
        return findings.make("device-mismatch", _say("device_raised", dev=dev, error=load.describe(o.error),
                                                     said=said), line=line, score=1.5)
    if o.outputs is None:
        return None
    for name, out in zip(check.spec.outputs, o.outputs):
        if out.device.type != dev:
            return findings.make("device-mismatch", _say("comes_back_on", dev=dev, name=name, device=out.device.type,
                                                         said=said), line=made[0][1] if made else None, score=1.5)
    if made and guess:  # matmul, einsum and indexing accept a CPU operand on meta; on a GPU most of them raise
        op, line = made[0]
        # score 1.2: a tensor that never reaches the inputs' device nearly always breaks there, ahead of warnings
        # about a convention (nan-on-empty-row)
        return findings.make("device-mismatch", _say("never_moved", dev=dev, op=op, line=line), line=line,
                             score=1.2)
    return None


def on_gpu(check, device: str, name: str):
    """The device stage on a GPU: the first case on `device` in float32 and the half types (float32 alone for
    integer inputs), each against the reference in that dtype. `name` names the device in the detail."""
    dtypes, on = (DTYPES if check.spec.float_inputs else (torch.float32,)), _say("on_gpu", name=name)
    status, detail = in_dtypes(check, dtypes, device, on=on)
    # then each other way of calling (no mask...) in float32: a default made for a missing input is made only
    # there, and the meta device's warning about it is settled only by a run that made it
    others = _shapes_of_call(check.cases)[1:]
    for case in others:
        if status != PASS:
            break
        before = len(check.report.findings)
        status, detail = in_dtypes(check, (torch.float32,), device, on=on, case=case)
        for found in check.report.findings[before:]:
            found.evidence += _say("in_case", case=case.label)
    if status == PASS:
        names = [str(d).replace("torch.", "") for d in dtypes]
        said = names[0] if len(names) == 1 else _say("and_last", first=_say("sep").join(names[:-1]), last=names[-1])
        return PASS, _say("runs_on_gpu", name=name, said=said) + (_say("each_way") if others else "")
    return status, detail
