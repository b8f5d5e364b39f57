"""The attn-drill command line: parse, call, render.

Startup time matters: `list` and `--help` should cost little more than starting Python. Importing
typer alone about doubles that, so `main()` answers those two without it (`_fast_path`), and the
typer app is built only for the other commands (`get_app`). The commands' work is in plain `cmd_*`
functions that both paths call. Nothing here ever imports torch: `check` hands the files to a worker
process (attn_drill.check) and renders the reports it sends back.

(No `from __future__ import annotations` here: typer reads the annotations of the nested commands.)
"""

import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, List, NoReturn, Optional

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise
    from attn_drill.state import State

APP_HELP = ("Drill the attention coding round: write SDPA, multi-head attention, masks... by hand, "
            "and get told which mistake you made.")
EPILOG = "New here? attn-drill list, then attn-drill start sdpa."
COMMANDS = {  # name: one-line help, for typer's help and for the fast root help alike
    "list": "List the exercises, your status and best times.",
    "start": "Write an exercise's skeleton and show the task.",
    "check": "Check your file and name your mistake.",
    "hint": "Show one more hint (--all: every hint).",
    "solution": "Show a model answer (asks before you pass).",
    "reset": "Put the skeleton back (after a backup).",
    "watch": "Check your file again on every save.",
    "mock": "A timed mock interview, follow-up questions, a scorecard.",
    "stats": "Your progress: times, passes, frequent mistakes, mock scores.",
}
# Equal to attn_drill.check.DEFAULT_TIMEOUT (a test keeps them equal): importing the checker would
# slow down --help. `check` reads the real one when it runs.
DEFAULT_TIMEOUT_HELP = 10.0
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
    from attn_drill import catalogue, listing, state

    st = state.load()
    sys.stdout.write(listing.table(catalogue.exercises().values(), st, colour=listing.use_colour()))
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
    from attn_drill import check as checker  # no torch on this side

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

    from attn_drill import listing, render

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
            render.say(out, f"Solved in {listing.duration(took)} (target {ex.minutes} min); "
                            f"best {listing.duration(best)}.")
        elif not rep.passed:
            render.say(out, "Stuck? ", (f"attn-drill hint {ex.id}", "bold cyan"), " gives a nudge.")
    if len(jobs) > 1 and not as_json:
        out.rule()
        render.say(out, f"{len(results)} files: {results.count(True)} passed, {results.count(False)} failed")
    return results


def _record(ex: "Exercise", path: Path, rep, source: str) -> tuple:
    """Note a check in the progress file and the practice history; (solve time or None, best time)."""
    from attn_drill import history, state

    slug = rep.findings[0].slug if rep.findings else None
    with state.edit() as st:
        took = st.record_check(ex.id, path, passed=rep.passed, seed=rep.seed, finding=slug)
        best = st.best(ex.id)
        own = st.file(ex.id) == Path(path).resolve()  # the started file: its checks form one attempt
        attempt = st.peek(ex.id).get("started_at") if own else None
    history.record_report(rep, source=source, attempt=attempt, solve_seconds=took)
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
    from attn_drill import render, state

    st = state.load()
    ex = _exercise(exercise_id) if exercise_id else _current(st, "solution")
    passed = st.status(ex.id) == state.PASSED
    if not passed and not yes:
        _confirm_or_refuse(
            f"You have not passed {ex.id} yet. Show the model answer anyway?",
            f"you have not passed {ex.id} yet, and seeing the answer spoils the drill. "
            f"attn-drill hint {ex.id} gives a nudge; attn-drill solution {ex.id} --yes shows it anyway.")
    if not passed:
        with state.edit() as s:
            s.entry(ex.id)["solution_seen"] = state.now()
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


def cmd_watch(exercise_id: Optional[str], seed: Optional[int], timeout: Optional[float]) -> int:
    from attn_drill import render, render_mock, state, watch

    [(path, ex)] = _jobs([], exercise_id, state.load())
    out, nice = render.console(), _nice(path)
    render_mock.watch_intro(out, ex, nice)
    try:
        with watch.Checker(ex.id, seed=seed, timeout=timeout) as checker:
            for _ in watch.Watcher(path).changes(on_missing=lambda: render_mock.watch_missing(out, nice)):
                rep = checker.check(path)
                render_mock.watch_report(out, rep, ex)  # the verdict first: recording takes a few ms
                took, best = _record(ex, path, rep, "watch")
                render_mock.watch_footer(out, rep, ex, nice, took=took, best=best)
    except KeyboardInterrupt:
        render_mock.watch_stopped(out)
    return 0


def cmd_mock(exercise_id: Optional[str], minutes: Optional[float], strict: bool, seed: Optional[int],
             answers: Optional[str], abandon: bool) -> int:
    from attn_drill import mock, questions, render, render_mock

    try:
        scripted = questions.parse_answers(answers)
    except ValueError as e:
        _fail(f"--answers: {e}.", "give the choice numbers in order, e.g. --answers 1,3,2")
    forced = _exercise(exercise_id) if exercise_id else None
    out = render.console()
    try:
        with mock.lock():
            session = mock.load()
            if abandon:
                return _abandon_mock(out, session)
            ui = render_mock.MockScreen(out)
            if session is not None:
                asked = (forced and forced.id != session.exercise) or minutes or (strict and not session.strict)
                note = (f"A mock of {session.exercise} is in progress: finishing it first "
                        "(attn-drill mock --abandon drops it)." if asked else "")
                ui.intro(session, _exercise(session.exercise), _nice(Path(session.file)), resumed=True, note=note)
            else:
                session = _begin_mock(ui, forced, minutes, strict, seed)
            with mock.Keys(_stdin_fd()) as keys:
                return mock.run(session, ui, keys, answers=scripted)
    except mock.MockBusy as e:
        _fail(f"another mock is running (process {e.pid}): one at a time.",
              "Finish it in its terminal, or press Ctrl-C there to leave it for later.")


def _begin_mock(ui, forced: Optional["Exercise"], minutes: Optional[float], strict: bool, seed: Optional[int]):
    import random

    from attn_drill import mock, workspace

    ex, reason = (forced, "") if forced else mock.pick(random.Random(seed))
    try:
        session, written = mock.begin(ex, minutes=minutes, strict=strict, seed=seed, reason=reason)
    except (workspace.WorkspaceError, OSError) as e:
        _fail(str(e))
    ui.intro(session, ex, _nice(written.path), resumed=False, backup=written.backup)
    return session


def cmd_stats(as_json: bool) -> None:
    from attn_drill import stats

    data = stats.compute()
    if as_json:
        import json

        print(json.dumps(data, indent=2))
        return
    from attn_drill import render, render_mock

    render_mock.stats(render.console(), data)


def _abandon_mock(out, session) -> int:
    from attn_drill import mock, render

    if session is None:
        render.say(out, "No mock in progress.")
        return 0
    mock.drop()
    render.say(out, f"Dropped the mock of {session.exercise}; its file stays at ", (_nice(Path(session.file)), "bold"))
    return 0


def _stdin_fd() -> Optional[int]:
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # no real stdin (an embedding, a test runner)
        return None


# -- the typer app ---------------------------------------------------------------------------------
def _complete_ids(incomplete: str) -> List[str]:
    from attn_drill import catalogue

    return [i for i in catalogue.exercises() if i.startswith(incomplete)]


def _fast_help_classes():
    """typer 0.29 coerces every parameter's value through a pydantic adapter (~0.1 s to import
    pydantic), bool values excepted; an absent --help flag has the value None, so `CMD --help` and
    `--version` would pay it too. A False default makes it a bool."""
    from typer.core import TyperCommand, TyperGroup

    class FastHelp:
        def get_help_option(self, ctx):
            opt = super().get_help_option(ctx)
            if opt is not None and opt.default is None:
                opt.default = False
            return opt

    return type("Group", (FastHelp, TyperGroup), {}), type("Command", (FastHelp, TyperCommand), {})


@lru_cache(maxsize=1)
def get_app():
    """The typer app: parsing and help only; each command calls its cmd_* function."""
    import typer
    from typing import Annotated

    group, command = _fast_help_classes()
    app = typer.Typer(
        cls=group, name="attn-drill", help=APP_HELP, epilog=EPILOG, no_args_is_help=True,
        add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain help: typer's rich help imports markdown-it and pygments (~70 ms)
    )

    def cmd(name: str, more: str = ""):
        return app.command(name, cls=command, short_help=COMMANDS[name],
                           help=COMMANDS[name] + ("\n\n" + more if more else ""))

    Id = Annotated[str, typer.Argument(metavar="ID", help="Exercise id (attn-drill list shows them).",
                                       autocompletion=_complete_ids, show_default=False)]
    OptId = Annotated[Optional[str], typer.Argument(
        metavar="[ID]", help="Exercise id; the one started last if left out.",
        autocompletion=_complete_ids, show_default=False)]
    Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do it without asking.")]

    def version(value: bool) -> None:
        if value:
            from attn_drill import __version__

            typer.echo(f"attn-drill {__version__}")
            raise typer.Exit()

    @app.callback()
    def root(_: Annotated[bool, typer.Option("--version", callback=version, is_eager=True,
                                             help="Show the version and exit.")] = False) -> None:
        pass

    @cmd("list")
    def list_() -> None:
        cmd_list()

    @cmd("start", "The file goes to DIR/<file> (./attn-practice by default). An existing file is never "
                  "overwritten: --force backs it up first and prints where.")
    def start(
        exercise_id: Id,
        folder: Annotated[Optional[Path], typer.Option(
            "--dir", metavar="DIR", show_default=False, help="Folder for the file (default ./attn-practice).")] = None,
        force: Annotated[bool, typer.Option("--force", help="Start over: back the file up, then write the skeleton.")] = False,
    ) -> None:
        cmd_start(exercise_id, folder, force)

    @cmd("check", "Without PATHS, checks the file of the exercise you started last. Exit status: 0 if "
                  "every file passes, 1 if one fails, 2 for a usage error.")
    def check(
        files: Annotated[Optional[List[Path]], typer.Argument(
            metavar="PATHS", show_default=False, help="Files to check; the exercise started last if left out.")] = None,
        exercise_id: Annotated[Optional[str], typer.Option(
            "--exercise", "-e", metavar="ID", autocompletion=_complete_ids, show_default=False,
            help="The exercise the files are for (default: from each file's name).")] = None,
        as_json: Annotated[bool, typer.Option(
            "--json", help="Print the report as JSON (JSON Lines for several files).")] = False,
        seed: Annotated[Optional[int], typer.Option(
            min=0, metavar="N", show_default=False, help="Seed for the random cases, to replay a check.")] = None,
        timeout: Annotated[Optional[float], typer.Option(
            min=0.1, metavar="SECONDS", show_default=False,
            help=f"Time allowed per file (default {DEFAULT_TIMEOUT_HELP:g} s).")] = None,
    ) -> None:
        raise SystemExit(cmd_check(files or [], exercise_id, as_json, seed, timeout))

    @cmd("hint", "Hints build up: each call shows one more, remembered per exercise.")
    def hint(exercise_id: OptId = None,
             show_all: Annotated[bool, typer.Option("--all", help="Show every hint now.")] = False) -> None:
        cmd_hint(exercise_id, show_all)

    @cmd("solution", "Before you have passed the exercise it asks to confirm; with no terminal to ask on "
                     "it refuses unless you give --yes.")
    def solution(exercise_id: OptId = None, yes: Yes = False) -> None:
        cmd_solution(exercise_id, yes)

    @cmd("reset", "Your file is copied to the backups folder first (the path is printed) and the clock "
                  "restarts. Asks to confirm; with no terminal to ask on it refuses unless you give --yes.")
    def reset(exercise_id: Id, yes: Yes = False) -> None:
        cmd_reset(exercise_id, yes)

    Seed = Annotated[Optional[int], typer.Option(
        min=0, metavar="N", show_default=False, help="Seed for the random cases (default: a new one each check).")]
    Timeout = Annotated[Optional[float], typer.Option(
        min=0.1, metavar="SECONDS", show_default=False,
        help=f"Time allowed per check (default {DEFAULT_TIMEOUT_HELP:g} s).")]

    @cmd("watch", "Watches the file of the exercise (the one started last if no ID) and shows the latest "
                  "report after each save. Each check runs your code in a fresh process. Ctrl-C stops.")
    def watch(exercise_id: OptId = None, seed: Seed = None, timeout: Timeout = None) -> None:
        raise SystemExit(cmd_watch(exercise_id, seed, timeout))

    @cmd("mock", "Picks an exercise (untried and weakest first) unless --exercise, writes a fresh file in "
                 "attn-practice/mock/ (your practice file is never touched) and counts down from its target "
                 "time. Every save is checked; it ends on a pass, at time-out or when you press q. Then "
                 "three follow-up questions and a scorecard, kept in your history (attn-drill stats). "
                 "Ctrl-C leaves it: the clock keeps running and attn-drill mock resumes it. Exit status: "
                 "0 if you passed, 1 if not, 130 when left for later.")
    def mock(
        exercise_id: Annotated[Optional[str], typer.Option(
            "--exercise", "-e", metavar="ID", autocompletion=_complete_ids, show_default=False,
            help="The exercise (default: picked from your history).")] = None,
        minutes: Annotated[Optional[float], typer.Option(
            min=0.1, metavar="N", show_default=False, help="Minutes on the clock (default: the target time).")] = None,
        strict: Annotated[bool, typer.Option(
            "--strict", help="Whiteboard style: no hints, no feedback until one check at the end.")] = False,
        seed: Annotated[Optional[int], typer.Option(
            min=0, metavar="N", show_default=False, help="Seed for the pick, the questions and the checks.")] = None,
        answers: Annotated[Optional[str], typer.Option(
            metavar="1,3,2", show_default=False,
            help="Answers to the follow-up questions, for scripts (no keyboard needed).")] = None,
        abandon: Annotated[bool, typer.Option(
            "--abandon", help="Drop the mock in progress (its file stays) and exit.")] = False,
    ) -> None:
        raise SystemExit(cmd_mock(exercise_id, minutes, strict, seed, answers, abandon))

    @cmd("stats", "Per exercise: attempts, passes, best and median solve time, the most frequent mistakes; "
                  "then recent mock scores and their trend. From the history of every check and mock.")
    def stats(as_json: Annotated[bool, typer.Option("--json", help="Print the same data as JSON.")] = False) -> None:
        cmd_stats(as_json)

    return app


def __getattr__(name: str):
    if name == "app":  # `from attn_drill.cli import app` still works, built on first use
        return get_app()
    raise AttributeError(name)


# -- the fast path ---------------------------------------------------------------------------------
def root_help(width: int = 80) -> str:
    """The same text as typer's root --help (a test holds them equal), without importing typer."""
    import textwrap

    w = min(width, 80) - 2
    wrap = lambda text: textwrap.fill(text, w, initial_indent="  ", subsequent_indent="  ")  # noqa: E731
    name_w = max(map(len, COMMANDS))
    lines = ["Usage: attn-drill [OPTIONS] COMMAND [ARGS]...", "", wrap(APP_HELP), "", "Options:",
             "  --version   Show the version and exit.", "  -h, --help  Show this message and exit.", "",
             "Commands:"]
    lines += [f"  {name:<{name_w}}  {text}" for name, text in COMMANDS.items()]
    lines += ["", wrap(EPILOG)]
    return "\n".join(lines) + "\n"


def _fast_path(argv: List[str]) -> bool:
    """Answer `list` and the root help without typer; False for anything else."""
    if argv == ["list"]:
        cmd_list()
        return True
    if argv in (["--help"], ["-h"]):
        import shutil

        sys.stdout.write(root_help(shutil.get_terminal_size().columns))
        return True
    return False


def main() -> None:
    if not _fast_path(sys.argv[1:]):
        get_app()(prog_name="attn-drill")
