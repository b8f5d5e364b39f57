"""Where does an attention module (mha, mha-fused, gqa) first go wrong? Forward hooks on the layers the
contract names, compared with the reference: the input projections' outputs, then what W_o receives.

The spec (a ModuleSpec) says what each layer should give: `projected(case)` (input layer -> its expected
output) and `merged(case)` (the heads merged back, what W_o should receive).
"""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.compare import closeness


def _say(key: str, /, **params) -> str:
    """This module's sentence `key` (i18n/<lang>/evidence/core.toml, [probes_modules])."""
    return t(f"evidence.core.probes_modules.{key}", **params)


def capture(check, case) -> dict[str, tuple]:
    """Run the user's module on `case` with hooks: {layer name: (its input, its output)} for layers that ran."""
    seen: dict[str, tuple] = {}
    try:
        module, bad = check.spec.build(check.target, case, torch.float64)
        if bad:
            return seen
        handles = [getattr(module, n).register_forward_hook(_record(seen, n)) for n in check.spec.layers]
        try:
            with torch.no_grad():
                check.spec.call(check.target, case, module=module)
        finally:
            for h in handles:
                h.remove()
    except BaseException:  # noqa: BLE001 - the caller already reports the exception itself
        pass
    return seen


def locate(check) -> str:
    spec, case = check.spec, check.cases[0]
    seen = capture(check, case)
    want = spec.projected(case)
    good = [n for n, w in want.items() if n in seen and closeness(seen[n][1], w) < 1e-6]
    missing = [n for n in spec.layers if n not in seen]
    parts = []
    sep = _say("sep")
    if good:
        parts.append(_say("gives_one" if len(good) == 1 else "give", layers=sep.join(good)))
    if missing:
        parts.append(_say("never_ran", layers=sep.join(missing)))
    if "W_o" in seen:
        y, got = spec.merged(case), seen["W_o"][0]
        if got.shape != y.shape:
            parts.append(_say("wo_shape", got=tuple(got.shape), want=tuple(y.shape)))
        elif closeness(got, y) < 1e-6:
            parts.append(_say("wo_matches"))
        else:
            B, T, D = y.shape
            H = case.dims["H"]
            blocks = (got - y).abs().reshape(B, T, H, D // H).amax(-1) > 1e-6  # (B, T, H): which blocks differ
            parts.append(_say("wo_differs", n=int(blocks.sum()), all=blocks.numel(), case=case.label))
    return _say("parts_sep").join(parts) if parts else _say("none_ran")


def merge_is_permuted(check) -> tuple[str, list[int] | None] | None:
    """W_o receives exactly the right numbers, rearranged: the heads are merged in the wrong order. (The evidence,
    and head_order's answer: where each whole head went, or None when the merge mixes heads with time steps.)"""
    case = check.cases[0]
    seen = capture(check, case)
    if "W_o" not in seen:
        return None
    got, want = seen["W_o"][0], check.spec.merged(case)
    if got.shape != want.shape or closeness(got, want) < 1e-6:
        return None
    B = want.size(0)
    if closeness(got.reshape(B, -1).sort(-1).values, want.reshape(B, -1).sort(-1).values) > 1e-9:
        return None
    order = head_order(got, want, case.dims["H"])
    if order is None:
        return _say("permuted", case=case.label), order
    if order == list(range(len(order)))[::-1]:
        return _say("reversed", case=case.label), order
    moved = _say("sep").join(_say("head_at", h=h, p=p) for h, p in enumerate(order) if h != p)
    return _say("moved", case=case.label, moved=moved), order


def head_order(got: torch.Tensor, want: torch.Tensor, H: int) -> list[int] | None:
    """Where each head's block of features went, when the user's merge moves whole heads: order[h] is the block
    of `got` that holds the reference's head h; None when the blocks are not whole heads."""
    B, T, D = want.shape
    if D % H:
        return None
    g, w = got.reshape(B, T, H, D // H), want.reshape(B, T, H, D // H)
    order = []
    for h in range(H):
        at = [p for p in range(H) if closeness(g[:, :, p], w[:, :, h]) < 1e-9]
        if len(at) != 1:
            return None
        order.append(at[0])
    return order if sorted(order) == list(range(H)) else None


def _record(seen: dict, name: str):
    def hook(module, inputs, output):
        if name not in seen and inputs and isinstance(inputs[0], torch.Tensor):
            seen[name] = (inputs[0].detach().double(), output.detach().double())
    return hook
