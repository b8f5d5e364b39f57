"""Where does a Transformer layer (encoder-layer, decoder-layer) first go wrong? Forward hooks on its named
sub-modules (self_attn, cross_attn, ff1, ff2, norm1...), in the user's layer and in the reference's, on the
same case: the first sub-module whose input or output differs says which sub-layer, residual or norm.

An attention sub-layer is also held to multi-head attention itself on the very inputs the user's layer hands
it (`departing`): when its outputs differ there, the mistake is inside the user's MultiHeadAttention.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import torch

from attn_drill.i18n import t
from attn_drill.judge.compare import closeness
from attn_drill.judge.specs.base import reference_module
from attn_drill.judge.variants.attention import mha
from attn_drill.judge.variants.layers import sub_params

SAME = 1e-6


@dataclass
class Call:
    name: str  # the sub-module, e.g. "cross_attn"
    inputs: tuple  # its tensor arguments: (query, key, value, mask) for attention, (x,) for the others
    output: tuple | None  # its outputs: (out, weights) for attention; None when it raised
    line: int | None = None  # the line of `path` (capture's) that called it, in the outermost of its frames
    inner: int | None = None  # ... in the innermost (the call itself, inside a helper the layer calls)


def watched(spec) -> tuple[str, ...]:
    return spec.attns + ("ff1", "ff2") + tuple(f"norm{i}" for i in range(1, spec.norms + 1))


def capture(spec, cls, case, path=None) -> list[Call]:
    """Build cls's layer for the case and run it with hooks: every call of a watched sub-module, in order
    (what ran before an exception too), with the line of the file `path` that made it, if given."""
    calls: list[Call] = []
    try:
        module, bad = spec.build(cls, case, torch.float64)
        if bad:
            return calls
        handles = []
        for name in watched(spec):
            try:
                sub = module.get_submodule(name)
            except AttributeError:
                continue
            enter, leave = _record(calls, name, name in spec.attns, path)
            handles.append(sub.register_forward_pre_hook(enter, with_kwargs=True))
            handles.append(sub.register_forward_hook(leave, with_kwargs=True))
        try:
            with torch.no_grad():
                spec.call(None, case, module=module)
        finally:
            for h in handles:
                h.remove()
    except BaseException:  # noqa: BLE001 - the caller reports the exception itself
        pass
    return calls


def _record(calls: list, name: str, attention: bool, path=None):
    """(pre-hook, hook): the call is kept on entry, its output filled in on return (None if it raised)."""
    def enter(module, args, kwargs):
        if attention:
            names = ("query", "key", "value", "mask")
            given = list(args) + [kwargs.get(n) for n in names[len(args):]]
            inputs = tuple(given[:4])
        else:
            inputs = tuple(args[:1])
        calls.append(Call(name, tuple(_plain(t) for t in inputs), None, *_caller_lines(path)))

    def leave(module, args, kwargs, output):
        call = next(c for c in reversed(calls) if c.name == name)
        outs = output if isinstance(output, tuple) else (output,)
        call.output = tuple(_plain(t) for t in outs)
    return enter, leave


def _caller_lines(path) -> tuple[int | None, int | None]:
    """The lines of the file `path` that are calling a sub-module now: (the outermost of its frames on the stack,
    the layer's forward; the innermost, the call itself, inside a helper the forward calls)."""
    lines = []
    if path is not None:
        want, frame = os.path.realpath(path), sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename in (str(path), want):
                lines.append(frame.f_lineno)
            frame = frame.f_back
    return (lines[-1], lines[0]) if lines else (None, None)


def _plain(t):
    if isinstance(t, torch.Tensor):
        return t.detach().clone() if t.dtype == torch.bool else t.detach().double()
    return t


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    if a.dtype == torch.bool or b.dtype == torch.bool:  # masks: the same keys visible, whatever the shape given
        try:
            return a.dtype == b.dtype and bool(torch.equal(*torch.broadcast_tensors(a, b)))
        except RuntimeError:
            return False
    return a.shape == b.shape and closeness(a, b) < SAME


def locate(check) -> str:
    """The first sub-module, in the reference's order, whose input or output departs, in words."""
    spec = check.spec
    bad = [o for o, r in zip(check.outcomes, check.refs) if o.outputs is None or closeness(o.outputs[0], r[0]) > SAME]
    case = (bad[0] if bad else check.outcomes[0]).case
    mine = capture(spec, check.target, case)
    ref = capture(spec, getattr(reference_module(spec.file), spec.name), case)
    before, previous = t("evidence.cache.probes_layers.layer_input"), None
    for want in ref:
        got = next((c for c in mine if c.name == want.name), None)
        if got is None:
            return t("evidence.cache.probes_layers.never_ran", name=want.name, case=case.label)
        if not all(_same(a, b) for a, b in zip(got.inputs, want.inputs)):
            which = _which(got, want)
            between = (t("evidence.cache.probes_layers.the_activation") if (previous, want.name) == ("ff1", "ff2")
                       else t("evidence.cache.probes_layers.residual_or_norm"))
            return t("evidence.cache.probes_layers.first_to_depart", name=want.name, which=which, before=before,
                     between=between, case=case.label)
        if got.output is None or not all(_same(a, b) for a, b in zip(got.output, want.output)):
            if got.output is None:
                return t("evidence.cache.probes_layers.raises", name=want.name, case=case.label)
            return t("evidence.cache.probes_layers.other_outputs", name=want.name, case=case.label)
        before, previous = t("evidence.cache.probes_layers.output_of", name=want.name), want.name
    return t("evidence.cache.probes_layers.all_match", before=before, case=case.label)


def _which(got: Call, want: Call) -> str:
    if len(want.inputs) == 1:
        return t("evidence.cache.probes_layers.its_input")
    names = ("query", "key", "value", "mask")
    wrong = [n for n, a, b in zip(names, got.inputs, want.inputs) if not _same(a, b)]
    return t("evidence.cache.probes_layers.its", names=t("finding.and").join(wrong))


def departing(check) -> tuple[list[str], object]:
    """(the attention sub-layers whose outputs differ from multi-head attention's on the inputs the user's layer
    hands them, the case that shows it), over the cases in order; ([], None) when none does."""
    spec = check.spec
    for o in check.outcomes:
        case, names = o.case, []
        for call in capture(spec, check.target, case):
            if call.name in names or call.name not in spec.attns:
                continue
            query, key, value, mask = call.inputs
            try:
                want = mha(sub_params(case.params, call.name), case.dims["H"], query, key, value, mask)
            except (RuntimeError, TypeError, AttributeError):
                continue  # inputs multi-head attention does not take: the layer's business, not the sub-layer's
            if call.output is None or len(call.output) != 2 or not all(_same(a, b) for a, b in zip(call.output, want)):
                names.append(call.name)
        if names:
            return names, case
    return [], None


def weights_picture(check, case, name: str) -> dict | None:
    """The weights of the user's `name` sub-layer beside the reference's on one case (its first call), for a
    mask finding; None when either did not return weights of one shape."""
    from attn_drill.judge.pictures import heatmap

    spec = check.spec
    mine = next((c for c in capture(spec, check.target, case) if c.name == name and c.output), None)
    reference = getattr(reference_module(spec.file), spec.name)
    ref = next((c for c in capture(spec, reference, case) if c.name == name), None)
    if mine is None or ref is None or len(mine.output) != 2 or not isinstance(mine.output[1], torch.Tensor):
        return None
    if mine.output[1].shape != ref.output[1].shape:
        return None
    pic = heatmap(mine.output[1], ref.output[1], case.label)
    pic["title"] = t("evidence.cache.probes_layers.picture_title", name=name, title=pic['title'])
    return pic
