"""Public layouts of an attention module's projections, as memorised from tutorials and codebases. When the
contract's names (W_q, W_k, ...) are missing but one of these layouts is there, the missing-name finding says
which layout it is, where it comes from, and exactly what to rename: the weights are copied in by name."""

from __future__ import annotations

import re

from torch import nn

from attn_drill.i18n import t

ROLES = {"W_q": "q", "W_k": "k", "W_v": "v", "W_o": "o", "W_qkv": "qkv"}  # the contract's names, by role

# (where the layout comes from: the key evidence.attention.specs_layouts.<key> says it, its name for each role it has)
LAYOUTS = (
    ("annotated", {"q": "linears[0]", "k": "linears[1]", "v": "linears[2]", "o": "linears[3]"}),
    ("hugging_face", {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    ("llama", {"q": "wq", "k": "wk", "v": "wv", "o": "wo"}),
    ("gpt2", {"qkv": "c_attn", "o": "c_proj"}),
)


def _layer(module: nn.Module, path: str):
    """`linears[0]` or `q_proj` on the module; None when it is not there."""
    name, index = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", path).groups()
    sub = getattr(module, name, None)
    if index is not None:
        try:
            sub = sub[int(index)]
        except (TypeError, IndexError, KeyError):
            return None
    return sub


def _is_linear(sub) -> bool:
    return isinstance(sub, nn.Module) and isinstance(getattr(sub, "weight", None), nn.Parameter)


def found(module: nn.Module, layers: tuple[str, ...]) -> tuple[str, list[tuple[str, str]]] | None:
    """(the layout's source, [(its name, the contract's name)]) for the first known layout that has a layer for
    every projection the contract asks for; None when none fits."""
    wanted = {ROLES[n]: n for n in layers if n in ROLES}
    for source, names in LAYOUTS:
        if wanted and set(wanted) <= set(names) and all(_is_linear(_layer(module, names[r])) for r in wanted):
            return t(f"evidence.attention.specs_layouts.{source}"), [(names[r], ours) for r, ours in wanted.items()]
    return None


def rename(module: nn.Module, layers: tuple[str, ...], finding, owner: str = "self"):
    """The missing-name finding, told which public layout the module (`owner`: self, or self.self_attn in a
    layer) follows and what to rename; as it was when the module follows none."""
    layout = found(module, layers)
    if layout is None:
        return finding
    source, pairs = layout
    who = (t("evidence.attention.specs_layouts.your_module") if owner == "self" else
           t("evidence.attention.specs_layouts.your_owner", owner=owner))
    finding.evidence = t("evidence.attention.specs_layouts.follows", who=who, source=source,
                         names=", ".join(ours for _, ours in pairs))
    finding.fix = t("evidence.attention.specs_layouts.rename",
                    renames=", ".join(f"{owner}.{theirs} -> {owner}.{ours}" for theirs, ours in pairs))
    return finding
