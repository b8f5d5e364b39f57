"""The work of the drill-loop commands (list, start, check, hint, solution, reset) and the helpers every
command shares: usage errors (exit 2, one line and the command that would work), exercise lookup, confirmation.

Plain functions, called by cli.py's typer app and by its fast path. Nothing here imports torch: `check` hands
the files to a worker process (attn_drill.judge) and renders the reports it sends back.
"""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, NoReturn, Optional

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise
    from attn_drill.state import State

EXIT_USAGE = 2


# -- helpers ---------------------------------------------------------------------------------------
def _say(*parts, err: bool = False) -> None:
    from attn_drill import render

    render.say(render.console(stderr=err), *parts)


def _fail(message: str, *more: str) -> NoReturn:
    """A usage error: say what is wrong and what to do, exit 2."""
    _say(("error: ", "bold red"), message, err=True)
    for line in more:
        _say(line, err=True)
    raise SystemExit(EXIT_USAGE)


def _exercise(exercise_id: str) -> "Exercise":
    from attn_drill import catalogue

    ex = catalogue.get(exercise_id)
    if ex is not None:
        return ex
    import difflib

    known = list(catalogue.exercises())
    close = difflib.get_close_matches(exercise_id, known, n=1, cutoff=0.5)
    guess = f"did you mean {close[0]}? " if close else ""
    _fail(f"no exercise called {exercise_id!r}; {guess}(the exercises: {', '.join(known)})",
          _retry(exercise_id, close[0] if close else known[0]) or "attn-drill list shows the exercises.")


def _retry(old, new) -> str:
    """The command the user typed with `old` (a word, or a Path) replaced by `new`: the one that would work."""
    import shlex

    args = sys.argv[1:]
    same = (lambda a: a and Path(a) == old) if isinstance(old, Path) else (lambda a: a == old)
    fixed = [str(new) if same(a) else a for a in args]
    fixed = [f"{a.split('=', 1)[0]}={new}" if "=" in a and same(a.split("=", 1)[1]) else a for a in fixed]
    return "try: attn-drill " + shlex.join(fixed) if fixed != args else ""


def _practice_file(f: Path) -> Path:
    """Where `start` would have put a file of this name."""
    from attn_drill import paths

    return Path(paths.DEFAULT_PRACTICE_DIR) / f.name


def _quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


def _current(st: "State", command: str) -> "Exercise":
    """The exercise started last, for commands whose ID may be left out."""
    if st.current is None:
        _fail("no exercise started yet.",
              f"give one (attn-drill {command} ID), or start one: attn-drill start ID (attn-drill list shows the ids).")
    return _exercise(st.current)


def _nice(path: Path) -> str:
    """A path relative to the current folder when it is inside it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _interactive() -> bool:
    return sys.stdin.isatty()


def _confirm_or_refuse(question: str, refusal: str) -> None:
    """Ask on a terminal; with none to ask on, refuse (exit 2): a script must say --yes."""
    if not _interactive():
        _fail(refusal)
    import typer

    if not typer.confirm(question, default=False):
        _say("Nothing done.")
        raise SystemExit(1)


# -- the commands' work ----------------------------------------------------------------------------
def cmd_list() -> None:
    from attn_drill import catalogue, history, listing, state

    st = state.load()
    sys.stdout.write(listing.table(catalogue.exercises().values(), st, history.progress(),
                                   colour=listing.use_colour()))
    if st.current:
        print(f"current: {st.current}.  attn-drill check checks it, attn-drill hint gives a nudge.")
    else:
        print("Begin with attn-drill start ID, e.g. attn-drill start sdpa.")


def cmd_start(exercise_id: str, folder: Optional[Path], force: bool) -> None:
    from attn_drill import render, state, workspace

    ex = _exercise(exercise_id)
    try:
        written = workspace.write_skeleton(ex, workspace.practice_file(ex, folder), replace=force)
    except (workspace.WorkspaceError, OSError) as e:
        _fail(str(e))
    with state.edit() as st:
        earlier = st.file(ex.id)
        st.record_start(ex.id, written.path, restart_clock=written.written)
    out, path = render.console(), _nice(written.path)
    if written.backup:
        render.say(out, "Backed up your old file to ", (str(written.backup), "bold"))
    if written.written:
        render.say(out, "Wrote the skeleton to ", (path, "bold"))
    else:
        render.say(out, (path, "bold"), " already exists: left as it is (", ("--force", "bold"),
                   " starts over, after a backup).")
    if earlier and earlier != written.path and earlier.exists():
        render.say(out, f"(your earlier file for {ex.id} is still at {earlier})")
    out.print()
    out.print(render.task(ex), soft_wrap=True)
    out.print()
    render.say(out, "Next: edit ", (path, "bold"), f" (target {ex.minutes} min), then run ",
               ("attn-drill check", "bold cyan"))


def _jobs(files: List[Path], exercise_id: Optional[str], st: "State") -> list:
    """(path, exercise) pairs to check; a usage error (exit 2) for anything unclear."""
    from attn_drill import catalogue

    forced = _exercise(exercise_id) if exercise_id else None
    if not files:
        ex = forced or _current(st, "check")
        path = st.file(ex.id)
        if path is None:
            _fail(f"{ex.id} has no file yet.", f"run attn-drill start {ex.id}, or give the file: attn-drill check PATH")
        if not path.is_file():
            _fail(f"the file for {ex.id}, {path}, is gone.",
                  f"attn-drill start {ex.id} writes a fresh skeleton; or give a PATH.")
        return [(path, ex)]
    jobs = []
    for f in files:
        if f.is_dir():
            inside = [p for p in sorted(f.glob("*.py")) if catalogue.from_filename(p)]
            if not inside:
                _fail(f"{f} is a folder, with no exercise file in it.",
                      f"give the file's path; attn-drill start ID --dir {_quote(f)} writes one there.")
            _fail(f"{f} is a folder; give the exercise file inside it.",
                  _retry(f, inside[0]) or f"try: attn-drill check {_quote(inside[0])}")
        if not f.is_file():
            ex = forced or catalogue.from_filename(f)
            near = [p for p in (st.file(ex.id) if ex else None, _practice_file(f)) if p and p.is_file()]
            _fail(f"no such file: {f}", (_retry(f, near[0]) or f"try: attn-drill check {_quote(near[0])}") if near else
                  "give the path of your exercise file, or no path at all to check the exercise you started last "
                  "(attn-drill start ID writes one).")
        ex = forced or catalogue.from_filename(f)
        if ex is None:
            ids = list(catalogue.exercises())
            _fail(f"cannot tell which exercise {f.name} is for: name it after one (my_{ids[0]}.py) or say which.",
                  f"try: attn-drill check {_quote(f)} --exercise {ids[0]}   (the exercises: {', '.join(ids)})")
        jobs.append((f.resolve(), ex))
    return jobs


def cmd_check(files: List[Path], exercise_id: Optional[str], as_json: bool, seed: Optional[int],
              timeout: Optional[float]) -> int:
    """Check the files; the exit status: 0 if all passed, 1 if not."""
    from attn_drill import state

    jobs = _jobs(files, exercise_id, state.load())
    from attn_drill import process as checker  # no torch on this side

    reports = checker.run_checks([checker.Job(p, ex.id) for p, ex in jobs], seed=seed,
                                 timeout=checker.DEFAULT_TIMEOUT if timeout is None else timeout)
    try:
        results = _show_reports(jobs, reports, as_json)
    except KeyboardInterrupt:
        _say(("interrupted", "bold red"), err=True)
        return 130
    finally:
        reports.close()  # stops the worker if we leave early
    return 0 if results and all(results) else 1


def _show_reports(jobs: list, reports, as_json: bool) -> List[bool]:
    import json

    from attn_drill import render

    out, results = render.console(), []
    for (path, ex), rep in _with_spinner(out, jobs, reports, enabled=not as_json):
        took, best = _record(ex, path, rep, "check")
        results.append(rep.passed)
        if as_json:
            d = rep.to_dict()
            print(json.dumps(d, indent=2) if len(jobs) == 1 else json.dumps(d), flush=True)
            continue
        if len(results) > 1:
            out.rule()
        render.report(out, rep, ex)
        if rep.passed and took is not None:
            render.solved(out, ex, took, best)
        elif not rep.passed:
            render.say(out, "Stuck? ", (f"attn-drill hint {ex.id}", "bold cyan"), " gives a nudge.")
    if len(jobs) > 1 and not as_json:
        out.rule()
        render.say(out, f"{len(results)} files: {results.count(True)} passed, {results.count(False)} failed")
    return results


def _record(ex: "Exercise", path: Path, rep, source: str) -> tuple:
    """Note a check in the practice history; (solve time or None, best time). Checks of the started file
    form one attempt, timed from its start; the state file is only read."""
    from attn_drill import history, state

    st = state.load()
    attempt = st.started_at(ex.id) if st.file(ex.id) == Path(path).resolve() else None
    took = st.solve_seconds(ex.id, path) if rep.passed else None
    history.record_report(rep, source=source, attempt=attempt, solve_seconds=took)
    best = history.progress_of(ex.id).best
    if took is not None:  # this pass counts even when it could not be recorded
        best = round(took, 1) if best is None else min(best, round(took, 1))
    return took, best


def _with_spinner(out, jobs: list, reports, enabled: bool):
    """Pair each job with its report, with a spinner while waiting when on a terminal."""
    from contextlib import nullcontext

    for path, ex in jobs:
        waiting = out.status(f"checking {path.name} ({ex.id})...") if enabled and out.is_terminal else nullcontext()
        with waiting:
            rep = next(reports, None)
        if rep is None:
            return
        yield (path, ex), rep


def cmd_hint(exercise_id: Optional[str], show_all: bool) -> None:
    from attn_drill import render, state

    with state.edit() as st:
        ex = _exercise(exercise_id) if exercise_id else _current(st, "hint")
        total, before = len(ex.hints), min(st.hints_shown(ex.id), len(ex.hints))
        shown = total if show_all else min(before + 1, total)
        st.set_hints_shown(ex.id, shown)
    out = render.console()
    if total == 0:
        render.say(out, f"{ex.id} has no hints.")
        return
    out.print(render.hints(ex, shown, fresh=shown if shown > before and not show_all else None))
    if before >= total:
        render.say(out, f"No more hints: all {total} are above.")
    elif shown == total:
        render.say(out, f"That was the last hint (all {total} shown). ", (f"attn-drill solution {ex.id}", "bold cyan"),
                   " shows a model answer.")
    else:
        render.say(out, f"{total - shown} more: run ", (f"attn-drill hint {ex.id}", "bold cyan"), " again.")


def cmd_solution(exercise_id: Optional[str], yes: bool) -> None:
    from attn_drill import history, render, state

    st = state.load()
    ex = _exercise(exercise_id) if exercise_id else _current(st, "solution")
    passed = history.progress_of(ex.id).passed
    if not passed and not yes:
        _confirm_or_refuse(
            f"You have not passed {ex.id} yet. Show the model answer anyway?",
            f"you have not passed {ex.id} yet, and seeing the answer spoils the drill. "
            f"attn-drill hint {ex.id} gives a nudge; attn-drill solution {ex.id} --yes shows it anyway.")
    out = render.console()
    render.say(out, (ex.id, "bold cyan"), f"  {ex.title}: a model answer")
    out.print(render.solution(ex))


def cmd_reset(exercise_id: str, yes: bool) -> None:
    from attn_drill import render, state, workspace

    ex = _exercise(exercise_id)
    path = state.load().file(ex.id) or workspace.practice_file(ex)
    if path.is_file() and not workspace.same_as_skeleton(ex, path) and not yes:
        _confirm_or_refuse(
            f"Replace {path} with the skeleton? (your version is backed up first)",
            f"reset replaces {path} with the skeleton (after a backup); "
            f"run attn-drill reset {ex.id} --yes to go ahead.")
    try:
        written = workspace.write_skeleton(ex, path, replace=True)
    except (workspace.WorkspaceError, OSError) as e:
        _fail(str(e))
    with state.edit() as st:
        st.record_start(ex.id, written.path, restart_clock=True)
    out = render.console()
    if written.backup:
        render.say(out, "Backed up your file to ", (str(written.backup), "bold"))
    render.say(out, "Skeleton back in ", (_nice(written.path), "bold"), "; the clock restarts now.")
