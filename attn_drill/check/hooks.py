"""Where does a module first go wrong? Forward hooks on W_q, W_k, W_v and W_o, compared with the reference."""

from __future__ import annotations

import torch

from attn_drill.check import variants
from attn_drill.check.compare import closeness

NAMES = ("W_q", "W_k", "W_v", "W_o")


def capture(check, case) -> dict[str, tuple]:
    """Run the user's module on `case` with hooks: {layer name: (its input, its output)} for layers that ran."""
    seen: dict[str, tuple] = {}
    try:
        module, bad = check.spec.build(check.target, case, torch.float64)
        if bad:
            return seen
        handles = [getattr(module, n).register_forward_hook(_record(seen, n)) for n in NAMES]
        with torch.no_grad():
            check.spec.call(check.target, case, module=module)
        for h in handles:
            h.remove()
    except BaseException:  # noqa: BLE001 - the caller already reports the exception itself
        pass
    return seen


def merged_reference(case) -> torch.Tensor:
    """What W_o should receive: the heads' outputs merged back, (B, Tq, D)."""
    x, p, H = case.inputs, case.params, case.dims["H"]
    return variants.mha(p, H, x["query"], x["key"], x["value"], x["mask"], variants.Knobs(out_proj=False))[0]


def merge_is_permuted(check) -> str | None:
    """W_o receives exactly the right numbers, rearranged: the heads are merged in the wrong order."""
    case = check.cases[0]
    seen = capture(check, case)
    if "W_o" not in seen:
        return None
    got, want = seen["W_o"][0], merged_reference(case)
    if got.shape != want.shape or closeness(got, want) < 1e-6:
        return None
    B = want.size(0)
    if closeness(got.reshape(B, -1).sort(-1).values, want.reshape(B, -1).sort(-1).values) > 1e-9:
        return None
    return (f"W_o receives exactly the values of the correctly merged heads, in another order ({case.label}): "
            "attention is right, the merge rearranges it")


def locate(check) -> str:
    case = check.cases[0]
    seen = capture(check, case)
    x, p, H = case.inputs, case.params, case.dims["H"]
    want = {"W_q": variants.linear(x["query"], p, "W_q"), "W_k": variants.linear(x["key"], p, "W_k"),
            "W_v": variants.linear(x["value"], p, "W_v")}
    good = [n for n in ("W_q", "W_k", "W_v") if n in seen and closeness(seen[n][1], want[n]) < 1e-6]
    missing = [n for n in NAMES if n not in seen]
    parts = []
    if good:
        parts.append(f"{', '.join(good)} give the reference's outputs")
    if missing:
        parts.append(f"{', '.join(missing)} never ran")
    if "W_o" in seen:
        y, got = merged_reference(case), seen["W_o"][0]
        if got.shape != y.shape:
            parts.append(f"the input to W_o is {tuple(got.shape)}, expected {tuple(y.shape)}")
        elif closeness(got, y) < 1e-6:
            parts.append("the input to W_o matches, so the difference comes after it")
        else:
            B, T, D = y.shape
            d = D // H
            blocks = (got - y).abs().reshape(B, T, H, d).amax(-1) > 1e-6  # (B, T, H): which (position, head) differ
            parts.append(f"the input to W_o differs in {int(blocks.sum())} of {blocks.numel()} (batch, position, head) "
                         f"blocks ({case.label})")
    return "; ".join(parts) if parts else "no projection ran"


def _record(seen: dict, name: str):
    def hook(module, inputs, output):
        if name not in seen and inputs and isinstance(inputs[0], torch.Tensor):
            seen[name] = (inputs[0].detach().double(), output.detach().double())
    return hook
