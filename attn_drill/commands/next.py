"""The work of `attn-drill next`: start the most useful exercise now (schedule.next_up). No torch.

A review that is due starts from a fresh skeleton, as `start --force` does: the file you have is backed up first
(its path printed), and the clock restarts. Run again while that review is in progress, it leaves the file as it
is. A new exercise starts as `start` starts it: an existing file is never touched.
"""

from __future__ import annotations

from datetime import datetime, timezone

from attn_drill.commands.drill import cmd_start
from attn_drill.i18n import t

WHY = ("new", "review", "early")  # why next starts it: next.why_<kind> words it


def cmd_next() -> None:
    from attn_drill.render import report as render
    from attn_drill.store import schedule, state

    out = render.console()
    up = schedule.next_up()
    if up is None:
        render.say(out, t("next.nothing"))
        return
    ex, kind = up
    last = schedule.latest().get(ex.id)
    going = kind != "new" and last is not None and _started(state.load(), ex.id) > last["at"]
    why = t(f"next.why_{kind}") + (t("next.when", when=schedule.when(last['due'])) if kind == "early" else "")
    render.say_key(out, "next.going" if going else "next.next", id=(ex.id, "bold cyan"), why=why)
    cmd_start(ex.id, None, force=kind != "new" and not going, abandon=False)


def _started(st, exercise_id: str) -> float:
    """When the exercise's current attempt began (unix time); 0 if it never did."""
    stamp = st.started_at(exercise_id)
    try:
        then = datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return 0.0
    if then is None:
        return 0.0
    return (then if then.tzinfo else then.replace(tzinfo=timezone.utc)).timestamp()
