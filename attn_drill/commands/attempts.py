"""The work of `attempts` (your past versions), `repro` (the failing case as a script) and the plain and
diff forms of `solution`. No torch: repro writes a script that imports it when you run it."""

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from attn_drill.commands import resolve
from attn_drill.commands.usage import fail as _fail, nice as _nice, show as _show
from attn_drill.i18n import t
from attn_drill.say import printable

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise


def repro_hint(out, ex: "Exercise", rep, kept: bool) -> None:
    """Under a report whose values stage failed on a case: the command that replays it."""
    from attn_drill.render import report as render

    if kept and not rep.passed and rep.case is not None:
        render.say_key(out, "drill.repro", command=(f"attn-drill repro {ex.id}", "bold cyan"))


# -- attempts ------------------------------------------------------------------------------------------
def cmd_attempts(exercise_id: Optional[str], number: Optional[int], diff: bool) -> None:
    from attn_drill.store import attempts, state

    st = state.load()
    ex = resolve.exercise_or_current(exercise_id, st, "attempts")
    index = attempts.load(ex.id)
    if number is None:
        if diff:
            _fail(t("attempts.diff_needs_number"), t("usage.try", command=t("attempts.diff_try", id=ex.id)))
        _list(ex, index, st.file(ex.id))
        return
    attempt = attempts.find(index, number)
    if attempt is None:
        have = t("attempts.kept", span=_span(index)) if index.attempts else t("attempts.none_kept")
        _fail(t("attempts.no_such", number=number, id=ex.id, have=have), t("attempts.lists_them", id=ex.id))
    data = attempts.content(ex.id, attempt)
    if data is None:
        _fail(t("attempts.copy_gone", number=number, id=ex.id, folder=_show(attempts.folder(ex.id))))
    text = data.decode("utf-8", "replace")
    if not diff:
        _plain(text)
        return
    current = st.file(ex.id)
    mine = _read(current, ex)
    _diff(text, mine, t("attempts.diff_old", number=number, when=_when(attempt.at)),
          t("attempts.diff_now", path=_nice(current)))


def _list(ex: "Exercise", index, current: Optional[Path]) -> None:
    from attn_drill.render import report as render

    out = render.console()
    where = f" ({_nice(current)})" if current else ""
    if not index.attempts:
        render.say(out, t("attempts.none", id=ex.id, where=where))
        return
    from attn_drill.say import cells

    render.say(out, t("attempts.heading", id=ex.id, where=where))
    head = (t("attempts.first_checked"), t("attempts.verdict"))
    wide = (max(16, cells(head[0])), max(7, cells(head[1]), *(cells(t(f"attempts.{w}")) for w in ("passed", "failed"))))
    pad = lambda s, w: s + " " * (w - cells(s))  # noqa: E731 - a Chinese character takes two columns
    render.say(out, (f"    #  {pad(head[0], wide[0])}  {pad(head[1], wide[1])}  {t('attempts.first_mistake')}", "bold"))
    for a in index.attempts:
        word = t("attempts.passed") if a.passed else t("attempts.failed")
        again = t("attempts.again", n=a.checks) if a.checks > 1 else ""
        render.say(out, f"  {a.n:>3}  {pad(_when(a.at), wide[0])}  ", (pad(word, wide[1]), "green" if a.passed else "red"),
                   f"  {a.slug or '-'}{again}")
    render.say(out, t("attempts.footer", id=ex.id))


def _span(index) -> str:
    ns = [a.n for a in index.attempts]
    return t("attempts.span", first=ns[0], last=ns[-1]) if len(ns) > 1 else str(ns[0])


def _when(at: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


def _read(path: Optional[Path], ex: "Exercise") -> str:
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device would block the read, or never end
            _fail(t("attempts.not_regular", id=ex.id, path=_show(path)), t("usage.fresh_skeleton", id=ex.id))
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except (OSError, TypeError):
        gone = (t("attempts.file_gone", id=ex.id, path=_show(path)) if path
                else t("attempts.file_gone_nowhere", id=ex.id))
        _fail(gone, t("usage.fresh_skeleton", id=ex.id))


# -- plain text and diffs ------------------------------------------------------------------------------
def _plain(text: str) -> None:
    """Code as it is, to a pipe or a file; on a terminal with control characters escaped."""
    from attn_drill.say import printable

    sys.stdout.write(printable(text, multiline=True) if sys.stdout.isatty() else text)
    if text and not text.endswith("\n"):
        sys.stdout.write("\n")


def _diff(old: str, new: str, old_name: str, new_name: str) -> None:
    """A unified diff, coloured on a terminal (- red, + green), plain otherwise; "no difference" when equal."""
    import difflib

    from attn_drill.render import report as render

    lines = list(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                      old_name, new_name))
    if not lines:
        render.say(render.console(), t("attempts.same", old=old_name, new=new_name))
        return
    if not sys.stdout.isatty():
        sys.stdout.writelines(line if line.endswith("\n") else line + "\n" for line in lines)
        return
    out = render.console()
    for line in lines:
        style = ("bold" if line.startswith(("---", "+++")) else "red" if line.startswith("-")
                 else "green" if line.startswith("+") else "cyan" if line.startswith("@@") else "")
        out.print(render.text(line.rstrip("\n"), style), soft_wrap=True)


def show_solution(ex: "Exercise", diff: bool) -> None:
    """The model answer: plain Python when stdout is not a terminal (`> f.py` gives a valid file), else
    highlighted; with `diff`, your file against it (lines starting + are the model answer's)."""
    from attn_drill.render import report as render
    from attn_drill.store import state

    code = ex.reference.read_text(encoding="utf-8")
    if diff:
        current = state.load().file(ex.id)
        _diff(_read(current, ex), code, t("attempts.diff_yours", path=_nice(current)),
              t("attempts.diff_model", id=ex.id))
        return
    if not sys.stdout.isatty():
        _plain(code)
        return
    out = render.console()
    render.say(out, (ex.id, "bold cyan"), t("attempts.model_answer", title=ex.title))
    out.print(render.solution(ex))


# -- repro ---------------------------------------------------------------------------------------------
def cmd_repro(exercise_id: Optional[str]) -> None:
    from attn_drill.store import attempts, state
    from attn_drill.render import report as render
    from attn_drill.practice import repro

    st = state.load()
    ex = resolve.exercise_or_current(exercise_id, st, "repro")
    failure = attempts.load(ex.id).last_failure
    if failure is None:
        _fail(t("attempts.no_failure", id=ex.id), t("attempts.no_failure_more", id=ex.id))
    stage = render.stage_name(failure.stage)  # in the language in use
    if failure.case is None:
        _fail(t("attempts.no_case", id=ex.id, stage=stage, slug=failure.slug), t("attempts.no_case_more"))
    try:
        target, command = repro.write(ex.id, failure, _nice)
    except OSError as e:
        _fail(t("attempts.no_script", error=e.strerror or e))
    out = render.console()
    render.say_key(out, "attempts.wrote", path=(printable(_nice(target)), "bold"))
    render.say(out, t("attempts.repro_case", case=failure.case + 1, seed=failure.seed, stage=stage))
    render.say(out, t("attempts.repro_runs"))
    render.say_key(out, "attempts.run_it", command=(printable(command), "bold cyan"))  # shell-quoted; controls shown
