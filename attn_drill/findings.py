"""How a finding is made from a slug, its evidence and parameters; the words live apart, in mistakes.toml.

Detection code says *what* it found: a slug, evidence and a few parameters. mistakes.toml says how to tell the
user: level, title, why it matters, the fix (parameters fill `{name}` fields in the texts), and the hints.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from attn_drill import i18n
from attn_drill.report import Finding

ERROR, WARNING = "error", "warning"

MISTAKES = Path(__file__).with_name("mistakes.toml")  # every slug's level, title, why, fix and hints


def mistakes() -> dict[str, dict]:
    """mistakes.toml: slug -> {"level", "title", "why", "fix", "hints"}, in the language in use (i18n/zh/mistakes.toml
    words the same slugs; the level is always mistakes.toml's)."""
    return _mistakes(i18n.lang())


@lru_cache(maxsize=None)
def _mistakes(language: str) -> dict[str, dict]:
    table = tomllib.loads(MISTAKES.read_text(encoding="utf-8"))
    return table if language == i18n.EN else _over(table, i18n.table(language, "mistakes"))


def _over(en: dict, other: dict) -> dict:
    """`en` with every string or list `other` has for the same key in its place, tables merged key by key."""
    return {k: (_over(v, other.get(k, {})) if isinstance(v, dict) else other.get(k, v)) for k, v in en.items()}


class _Wording(Mapping):
    """slug -> (level, title, why it matters, fix), in the language in use."""

    def __getitem__(self, slug: str) -> tuple[str, str, str, str]:
        m = mistakes()[slug]
        return m["level"], m["title"], m["why"], m["fix"]

    def __iter__(self):
        return iter(mistakes())

    def __len__(self) -> int:
        return len(mistakes())


WORDING = _Wording()


def step_fix(kind: str) -> str:
    """values-mismatch's fix, by the kind of step where the computation departs (localise.py names the kinds;
    the words are in i18n's ui catalogue, [step_fix])."""
    key = kind.replace(" ", "_")
    return i18n.t(f"step_fix.{key}" if key in i18n.table(i18n.EN, "ui")["step_fix"] else "step_fix.step")


def sublayer(sublayers: list[str], title: str) -> str:
    """A mistake inside a layer's attention sub-layer (encoder- and decoder-layer): "in self_attn: {title}"."""
    return i18n.t("finding.in_sublayer", sublayer=i18n.t("finding.and").join(sublayers), title=title)


def not_handed_fix(call: str) -> str:
    """A layer that never hands a sub-layer its mask: the mask-ignored finding's fix, said of the layer."""
    return i18n.t("finding.not_handed_fix", call=call)


def heads_moved() -> tuple[str, str, str]:
    """wrong-head-merge's title, why and fix when whole heads are moved (reversed, shuffled), not interleaved."""
    return i18n.t("finding.heads_moved.title"), i18n.t("finding.heads_moved.why"), i18n.t("finding.heads_moved.fix")


def mask_tiled_fix() -> str:
    """mask-head-broadcast's fix when heads were flattened to (B*H) for bmm and the mask tiled head-major."""
    return i18n.t("finding.mask_tiled_fix")


def in_sublayer(finding: Finding, sublayers: list[str], evidence: str) -> Finding:
    """The finding of a mistake inside an attention sub-layer, said of that sub-layer: "in cross_attn: the
    mask is broadcast without a head axis"; `evidence` comes first, the sub-layer's own evidence after it."""
    title = finding.title[:1].lower() + finding.title[1:]
    finding.title = sublayer(sublayers, title)
    finding.evidence = f"{evidence}: {finding.evidence}" if finding.evidence else evidence
    return finding


def without_sublayer(title: str) -> str:
    """The title as the table words it, without in_sublayer's "in self_attn: " (a choice beside other titles)."""
    before, _, after = i18n.t("finding.in_sublayer").partition("{sublayer}")
    middle, _, _ = after.partition("{title}")
    if title.startswith(before) and middle in title:
        head, rest = title[len(before):].split(middle, 1)
        if head.endswith("_attn"):
            return rest[:1].upper() + rest[1:]
    return title


def in_exercise(finding: Finding, exercise: str) -> Finding:
    """The finding as its exercise says it: mistakes.toml's `[slug.exercise]` table replaces the title, why or fix
    where the general words would mislead there (a causal diagonal in a sliding window is the window's edge)."""
    own = mistakes().get(finding.slug, {}).get(exercise)
    if isinstance(own, dict):
        finding.title = own.get("title", finding.title)
        finding.message = own.get("why", finding.message)
        finding.fix = own.get("fix", finding.fix)
    return finding


def make(slug: str, evidence: str = "", *, line: int | None = None, score: float = 0.0,
         picture: dict | None = None, level: str | None = None, **params) -> Finding:
    """Build a finding for `slug` with its wording filled in from `params`.

    `level` overrides the slug's usual level, for the rare warning that turns out to explain a failure."""
    default_level, title, why, fix = WORDING[slug]
    level = level or default_level
    p = i18n.Params({"where": i18n.t("finding.top_level")} | params)
    return Finding(
        slug=slug,
        level=level,
        title=i18n.fill(title, p),
        message=i18n.fill(why, p),
        evidence=evidence,
        fix=i18n.fill(fix, p),
        line=line,
        score=score,
        picture=picture,
    )
