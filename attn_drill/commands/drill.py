"""The work of the drill-loop commands (list, start, check, hint, solution, reset) and what the other command
modules share with them: option values, confirmation, recording a check. Usage errors and paths in messages
live in usage.py, which exercise and file a command means in resolve.py.

Plain functions, called by cli.py's typer app and by its fast path. Nothing here imports torch: `check` hands
the files to a worker process (attn_drill.judge) and renders the reports it sends back.

Bad input is a usage error before anything runs: option values out of range or not finite (the ranges
below), paths the system cannot look up. Text from outside that these messages echo (file names, values)
is escaped by say.printable, so it shows rather than acts on the terminal.
"""

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, List, Optional

if TYPE_CHECKING:
    from attn_drill.store.state import State

from attn_drill.i18n import t
from attn_drill.commands.usage import (EXIT_USAGE, describe as _describe, fail as _fail, is_file as _is_file,
    nice as _nice, say as _say, show as _show)

EXIT_LOCKED = 2  # the progress file stayed locked by another process: nothing was done, as for a usage error
SEED_MAX = 2**63 - 1  # what torch.Generator.manual_seed and SQLite's INTEGER (the history) both hold
TIMEOUT_RANGE = (0.1, 3600.0)  # seconds per check: an hour is far past anything an exercise needs
MINUTES_RANGE = (0.1, 240.0)  # a mock's clock: four hours is far past any target time


# -- option values -----------------------------------------------------------------------------------
def valid_seed(seed: Optional[int]) -> Optional[int]:
    """The seed, or a usage error for one out of range (the history and torch hold 0 to 2**63-1)."""
    if seed is None or 0 <= seed <= SEED_MAX:
        return seed
    _fail(t("drill.bad_seed", max=SEED_MAX, value=_show(seed)), _option_retry("--seed", None))


def valid_number(option: str, value: Optional[float], bounds: tuple, unit: str) -> Optional[float]:
    """The value, or a usage error for one out of `bounds` or not finite (inf and nan parse as floats).
    `unit`: "seconds" or "minutes" (drill.unit_<unit> words it)."""
    import math

    low, high = bounds
    if value is None or (math.isfinite(value) and low <= value <= high):
        return value
    fix = f"{high:g}" if value > high else None  # too big: the most allowed; else the default
    _fail(t("drill.bad_number", option=option, low=low, high=high, unit=t(f"drill.unit_{unit}"), value=value),
          _option_retry(option, fix))


def _option_retry(option: str, value: Optional[str]) -> str:
    """The command the user typed with `option` set to `value` (left out when None), or "" if not found."""
    import shlex

    args, fixed, skip = sys.argv[1:], [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
        elif a == option and i + 1 < len(args):
            skip = True
            fixed += [option, value] if value is not None else []
        elif a.startswith(option + "="):
            fixed += [f"{option}={value}"] if value is not None else []
        else:
            fixed.append(a)
    return t("usage.try", command="attn-drill " + shlex.join(fixed)) if fixed != args else ""


@contextmanager
def _edit_state() -> Iterator["State"]:
    """state.edit(), with a lock held too long by another process as one line and exit 2."""
    from attn_drill.store import state

    try:
        with state.edit() as st:
            yield st
    except state.Locked as e:
        _fail(t("drill.locked_pid" if e.pid else "drill.locked", pid=e.pid, wait=state.LOCK_WAIT, path=_show(e.path)),
              code=EXIT_LOCKED)


def _interactive() -> bool:
    return sys.stdin.isatty()


def _confirm_or_refuse(question: str, refusal: str) -> None:
    """Ask on a terminal; with none to ask on, refuse (exit 2): a script must say --yes."""
    if not _interactive():
        _fail(refusal)
    if not _confirm(question):
        _say(t("drill.nothing_done"))
        raise SystemExit(1)


def _confirm(question: str) -> bool:
    """typer.confirm(question, default=False), its complaint at an answer that is neither y nor n in the language
    in use (click's is English only): the question, " [y/N]: ", and y, yes, n, no or Enter (no)."""
    import typer

    prompt = f"{question} [y/N]: "
    while True:
        typer.echo(prompt[:-1], nl=False)  # the last character goes to input(), as click does (readline)
        try:
            value = input(prompt[-1:]).lower().strip()
        except (KeyboardInterrupt, EOFError):
            raise typer.Abort() from None
        if value in ("y", "yes"):
            return True
        if value in ("n", "no", ""):
            return False
        typer.echo(t("drill.invalid_answer"))


# -- the commands' work ----------------------------------------------------------------------------
def cmd_list() -> None:
    from attn_drill import catalogue
    from attn_drill.store import history, schedule, state
    from attn_drill.render import listing

    st = state.load()
    due = schedule.due()
    sys.stdout.write(listing.table(catalogue.exercises().values(), st, history.progress(),
                                   colour=listing.use_colour(), due=due))
    if due:
        print(t("list.due", mark=listing.DUE, ids=", ".join(due), first=due[0]))
    if catalogue.get(st.current or ""):
        print(t("list.current", id=st.current))
    else:
        print(t("list.begin"))


def _write_skeleton(ex, path: Path, *, replace: bool, content: Optional[bytes] = None):
    """workspace.write_skeleton, its refusals and I/O errors as one usage line."""
    from attn_drill.store import workspace

    try:
        return workspace.write_skeleton(ex, path, replace=replace, content=content)
    except workspace.WorkspaceError as e:
        _fail(str(e))
    except OSError as e:
        _fail(_describe(e, path))


def _dropping(ex, st: "State", path: Path) -> Optional[str]:
    """The attempt a fresh skeleton at `path` gives up: its start stamp, if that file is the exercise's started
    file and holds work (not the skeleton itself); else None."""
    from attn_drill.store import workspace

    if st.file(ex.id) != Path(path).absolute().resolve() or not _is_file(path):
        return None
    return None if workspace.same_as_skeleton(ex, path) else st.started_at(ex.id)


def _abandon(ex, attempt: Optional[str]) -> None:
    """An attempt given up without a pass is an Again for the exercise's review card (schedule.abandoned)."""
    if attempt is None:
        return
    from attn_drill.store import history, schedule

    if not any(c["passed"] for c in history.checks(ex.id) if c.get("attempt") == attempt):
        schedule.abandoned(ex, attempt=attempt, source="reset")


def cmd_start(exercise_id: str, folder: Optional[Path], force: bool, abandon: bool = True,
              notebook: bool = False) -> None:
    """`abandon`: a file with work that --force replaces is an attempt given up (an Again); not for `next`, which
    replaces a file the schedule has judged already to start its review. `notebook`: write DIR/<id>.ipynb
    instead (its checks are recorded as the notebook's; the practice file and its clock are left alone)."""
    from attn_drill.render import report as render
    from attn_drill.commands import resolve
    from attn_drill.store import workspace

    ex = resolve.exercise(exercise_id)
    if notebook:
        return _start_notebook(ex, folder, force)
    with _edit_state() as st:  # locked first: if another process holds it, nothing is written
        target = workspace.practice_file(ex, folder)
        dropped = _dropping(ex, st, target) if force and abandon else None
        written = _write_skeleton(ex, target, replace=force)
        earlier = st.file(ex.id)
        st.record_start(ex.id, written.path, restart_clock=written.written)
        if force:
            st.clear_hints(ex.id)
    _abandon(ex, dropped)
    out, path = render.console(), _nice(written.path)
    _said_written(out, written, path, "file", "skeleton")
    if earlier and earlier != written.path and _is_file(earlier):
        render.say(out, t("drill.earlier", id=ex.id, path=earlier))
    out.print()
    out.print(render.task(ex, out.width), soft_wrap=True)
    out.print()
    render.say_key(out, "drill.next_edit", path=(path, "bold"), minutes=ex.minutes,
                   command=("attn-drill check", "bold cyan"))


def _said_written(out, written, path: str, old: str, new: str) -> None:
    """What start did to the file: backed up, written, or left as it was."""
    from attn_drill.render import report as render

    if written.backup:
        render.say_key(out, f"drill.backed_up_{old}", path=(str(written.backup), "bold"))
    if written.written:
        render.say_key(out, f"drill.wrote_{new}", path=(path, "bold"))
    else:
        render.say_key(out, "drill.exists", path=(path, "bold"), force=("--force", "bold"))


def _start_notebook(ex, folder: Optional[Path], force: bool) -> None:
    from attn_drill.practice.notebook import notebook
    from attn_drill.render import report as render
    from attn_drill.store import workspace

    written = _write_skeleton(ex, workspace.practice_file(ex, folder).with_suffix(".ipynb"), replace=force,
                              content=notebook(ex))
    out, path = render.console(), _nice(written.path)
    _said_written(out, written, path, "notebook", "notebook")
    render.say_key(out, "drill.open_notebook", command=(f"jupyter lab {path}", "bold cyan"),
                   cell=(f"%%attn_check {ex.id}", "bold"))


def cmd_check(files: List[Path], exercise_id: Optional[str], as_json: bool, seed: Optional[int],
              timeout: Optional[float], verbose: bool = False, record: bool = True, junit: Optional[Path] = None) -> int:
    """Check the files; the exit status: 0 if all passed, 1 if not, 2 if a file of a batch could not be checked.
    `junit`: also write the verdicts there as JUnit XML."""
    import time

    from attn_drill.commands import resolve
    from attn_drill.store import state

    seed, timeout = valid_seed(seed), valid_number("--timeout", timeout, TIMEOUT_RANGE, "seconds")
    if junit is not None and (junit.is_dir() or not junit.parent.is_dir()):
        _fail(t("drill.junit_folder" if junit.is_dir() else "drill.junit_no_folder", path=_show(junit)))
    started = time.time()
    st = state.load()
    jobs = resolve.jobs(files, exercise_id, st)
    # A batch (a teacher's, an interviewer's) records only your own practice files; --no-record none.
    mine = {j[0] for j in jobs if isinstance(j, tuple) and record and (len(jobs) == 1 or st.file(j[1].id) == j[0])}
    from attn_drill.practice.record import read_bytes

    judged = {path: read_bytes(path) for path in mine}  # what is judged: a save during the check is not
    from attn_drill import process as checker  # no torch on this side

    reports = checker.run_checks([checker.Job(j[0], j[1].id) for j in jobs if isinstance(j, tuple)], seed=seed,
                                 timeout=checker.DEFAULT_TIMEOUT if timeout is None else timeout)
    kept: list = []  # (job, report or None) for --junit
    try:
        results = _show_reports(jobs, reports, as_json, judged, st, verbose, kept)
    except KeyboardInterrupt:
        _say((t("drill.interrupted"), "bold red"), err=True)
        return 130
    finally:
        reports.close()  # stops the worker if we leave early
    if junit is not None:
        _write_junit(junit, kept, started)
    if None in results:
        return EXIT_USAGE
    return 0 if results and all(results) else 1


def _write_junit(path: Path, kept: list, started: float) -> None:
    from attn_drill.render import junit
    from attn_drill.say import warn

    rows = []
    for job, rep in kept:
        if rep is None:  # resolve.Unusable
            rows.append((str(getattr(job, "path", "")), "", str(getattr(job, "message", job))))
        else:
            rows.append((str(job[0]), job[1].id, rep))
    try:
        junit.write(path, rows, started)
    except OSError as e:
        warn(t("drill.junit_not_written", path=_show(path), error=e.strerror or e))


def _show_reports(jobs: list, reports, as_json: bool, judged: dict, st: "State",
                  verbose: bool = False, kept: list | None = None) -> List[Optional[bool]]:
    """Each job's report in order (a file that could not be checked: its error); passed, failed or None.
    `judged`: the files to record (your own practice files), with the bytes that were checked."""
    import json

    from attn_drill.commands.attempts import repro_hint
    from attn_drill.practice.record import Recorded, after_check, practice_attempt
    from attn_drill.render import report as render

    out, results = render.console(), []
    for job, rep in _with_spinner(out, jobs, reports, enabled=not as_json):
        if kept is not None:
            kept.append((job, rep))
        if rep is None:  # resolve.Unusable: that file's line, and the batch goes on
            results.append(None)
            _unusable(out, job, as_json)
            continue
        (path, ex), keep = job, job[0] in judged
        results.append(rep.passed)
        if as_json:  # the verdict first: recording it can only warn, never keep it from showing
            d = rep.to_dict()
            print(json.dumps(d, indent=2) if len(jobs) == 1 else json.dumps(d), flush=True)
        else:
            if len(results) > 1:
                out.rule()
            render.report(out, rep, ex, verbose)
        done = after_check(ex, path, rep, source="check", attempt=practice_attempt(ex, path, st),
                           data=judged[path]) if keep else Recorded()
        if as_json:
            continue
        repro_hint(out, ex, rep, done.kept)
        if rep.passed and keep and len(jobs) == 1:
            render.solved(out, ex, done.solved, done.best, done.after)
        elif rep.not_started:
            render.say_key(out, "drill.fill_todos", path=(_nice(path), "bold"))
        elif rep.ours:
            render.say(out, t("drill.not_recorded"))
        elif not rep.passed:
            render.say_key(out, "drill.stuck", command=(f"attn-drill hint {ex.id}", "bold cyan"))
    if len(jobs) > 1 and not as_json:
        out.rule()
        bad = t("drill.batch_unchecked", n=results.count(None)) if None in results else ""
        render.say(out, t("drill.batch", files=len(results), passed=results.count(True), failed=results.count(False),
                          unchecked=bad))
    return results


def _unusable(out, e, as_json: bool) -> None:
    """A batch's file that could not be checked: its error line (JSON: an object with "error"), in its place."""
    from attn_drill.say import printable

    if as_json:
        import json

        print(json.dumps({"exercise": None, "file": str(e.path), "passed": False, "error": e.message}), flush=True)
        return
    out.rule()
    _say((t("usage.error"), "bold red"), printable(e.message), err=True)
    if e.more:
        _say(printable(e.more), err=True)


def _with_spinner(out, jobs: list, reports, enabled: bool):
    """Pair each job with its report, with a spinner while waiting when on a terminal; a file that could not be
    checked (resolve.Unusable) is paired with None."""
    from contextlib import nullcontext

    from attn_drill.render import report as render

    for job in jobs:
        if not isinstance(job, tuple):
            yield job, None
            continue
        path, ex = job
        waiting = (out.status(render.text(t("drill.checking", name=path.name, id=ex.id)))
                   if enabled and out.is_terminal else nullcontext())
        with waiting:
            try:
                rep = next(reports, None)
            except OSError as e:  # the checker could not even start (no temporary folder, a full disk)
                _fail(t("drill.no_checker", error=e.strerror or e), t("drill.no_checker_more"))
        if rep is None:
            return
        yield (path, ex), rep


def cmd_hint(exercise_id: Optional[str], show_all: bool) -> None:
    """One more hint: after a failing check, the named mistake's first (hints.py), then the exercise's."""
    from attn_drill.practice import hints
    from attn_drill.render import report as render
    from attn_drill.commands import resolve

    with _edit_state() as st:
        ex = resolve.exercise_or_current(exercise_id, st, "hint")
        shown = hints.reveal(ex, st, show_all)
    out = render.console()
    if not shown.mistake_total and not ex.hints:
        render.say(out, t("drill.no_hints", id=ex.id))
        return
    out.print(render.hints(ex, shown.general, fresh=shown.general_fresh, mistake=shown, width=min(out.width, 80)),
              soft_wrap=True)
    left = shown.left(ex)
    if shown.fresh is None and not show_all:
        render.say(out, t("drill.no_more_hints"))
    elif left == 0:
        render.say_key(out, "drill.last_hint", command=(f"attn-drill solution {ex.id}", "bold cyan"))
    else:
        render.say_key(out, "drill.more_hints", left=left, command=(f"attn-drill hint {ex.id}", "bold cyan"))


def cmd_solution(exercise_id: Optional[str], yes: bool, diff: bool = False) -> None:
    from attn_drill.store import history, state
    from attn_drill.commands import resolve
    from attn_drill.commands.attempts import show_solution

    st = state.load()
    ex = resolve.exercise_or_current(exercise_id, st, "solution")
    passed = history.progress_of(ex.id).passed
    if not passed and not yes:
        _confirm_or_refuse(
            t("drill.solution_ask", id=ex.id), t("drill.solution_refused", id=ex.id))
    show_solution(ex, diff)


def cmd_reset(exercise_id: str, yes: bool) -> None:
    from attn_drill.render import report as render
    from attn_drill.commands import resolve
    from attn_drill.store import state, workspace

    ex = resolve.exercise(exercise_id)
    path = state.load().file(ex.id) or workspace.practice_file(ex)
    if _is_file(path) and not workspace.same_as_skeleton(ex, path) and not yes:
        _confirm_or_refuse(
            t("drill.reset_ask", path=path), t("drill.reset_refused", path=path, id=ex.id))
    with _edit_state() as st:  # locked first: if another process holds it, nothing is replaced
        dropped = _dropping(ex, st, path)
        written = _write_skeleton(ex, path, replace=True)
        st.record_start(ex.id, written.path, restart_clock=True)
        st.clear_hints(ex.id)
    _abandon(ex, dropped)
    out = render.console()
    if written.backup:
        render.say_key(out, "drill.backed_up_yours", path=(str(written.backup), "bold"))
    render.say_key(out, "drill.reset_done", path=(_nice(written.path), "bold"))
