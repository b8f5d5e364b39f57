"""Hints that follow the diagnosis. No torch, no rich.

After a failing check, `attn-drill hint` first gives the hints of the mistake that check named (its first
error slug; mistakes.toml, one or two per slug), then goes on with the exercise's own hints
(catalogue.toml). "That check" is the last recorded check of the current attempt (the practice file since its
`start` or `reset`), so a fresh skeleton starts from the general hints again. What was seen is kept in the
state file per exercise: `hints_shown` (general) and `mistake_hints` ({slug: n}); `reset` and `start --force`
clear both (state.clear_hints).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise
    from attn_drill.store.state import State


def for_mistakes() -> dict[str, tuple[str, ...]]:
    """slug -> its hints, in order (mistakes.toml, beside each slug's wording)."""
    from attn_drill import findings

    return {slug: tuple(m.get("hints", ())) for slug, m in findings.mistakes().items()}


@dataclass
class Shown:
    """What one `hint` call shows: the mistake's hints seen (with its slug), the general ones seen, and which
    one is new (("mistake" or "general", 1-based index), or None when nothing new was left)."""
    slug: str | None
    mistake: tuple[str, ...]
    mistake_total: int
    general: int
    fresh: tuple[str, int] | None

    @property
    def general_fresh(self) -> int | None:
        """render.hints' `fresh`: the exercise's hint revealed now, 0 when a mistake's was (the others dimmed alike),
        None when nothing new was (none dimmed)."""
        if self.fresh is None:
            return None
        return self.fresh[1] if self.fresh[0] == "general" else 0

    def left(self, ex: "Exercise") -> int:
        return self.mistake_total - len(self.mistake) + len(ex.hints) - self.general


def last_mistake(ex: "Exercise", st: "State") -> str | None:
    """The first error slug of the current attempt's last check, if that check failed and the slug has hints."""
    from attn_drill.store import history

    attempt = st.started_at(ex.id)
    if attempt is None:
        return None
    # quiet: without a readable history, `hint` gives the exercise's hints, and warns only of what it cannot save
    mine = [c for c in history.checks(ex.id, quiet=True) if c.get("attempt") == attempt]
    if not mine or mine[-1]["passed"] or not mine[-1]["slugs"]:
        return None
    slug = mine[-1]["slugs"][0]
    return slug if for_mistakes().get(slug) else None


def seen_for(st: "State", exercise_id: str) -> dict[str, int]:
    seen = st.peek(exercise_id).get("mistake_hints")
    return {k: v for k, v in seen.items() if isinstance(v, int) and v > 0} if isinstance(seen, dict) else {}


def reveal(ex: "Exercise", st: "State", show_all: bool = False) -> Shown:
    """One more hint (all of them with `show_all`), the mistake's first; the state is updated, not saved."""
    slug = last_mistake(ex, st)
    mine = for_mistakes().get(slug, ()) if slug else ()
    seen = seen_for(st, ex.id)
    m_before, g_before = min(seen.get(slug, 0), len(mine)) if slug else 0, min(st.hints_shown(ex.id), len(ex.hints))
    m, g, fresh = m_before, g_before, None
    if show_all:
        m, g = len(mine), len(ex.hints)
    elif m < len(mine):
        m, fresh = m + 1, ("mistake", m + 1)
    elif g < len(ex.hints):
        g, fresh = g + 1, ("general", g + 1)
    if slug:
        st.entry(ex.id)["mistake_hints"] = {**seen, slug: m}
    st.set_hints_shown(ex.id, g)
    return Shown(slug, mine[:m], len(mine), g, fresh)
