"""The attn-drill command line: parse, call, render.

Startup time matters: `list`, `--help`, `start` and `hint` should cost little more than starting Python.
Importing typer (and the pydantic its parameter parsing pulls in) costs more than that, so `main()` answers
the plain forms of those without it (`_fast_path`), and the typer app is built only for the rest (`get_app`).
The commands' work is in plain `cmd_*` functions that both paths call, in commands/ (drill.py: the drill loop;
practice.py: watch, mock, stats). Nothing here ever imports torch.

(No `from __future__ import annotations` here: typer reads the annotations of the nested commands.)
"""

import sys
from functools import lru_cache
from pathlib import Path
from typing import List, Optional

from attn_drill.commands.drill import (MINUTES_RANGE, TIMEOUT_RANGE, cmd_check, cmd_hint, cmd_list, cmd_reset,
    cmd_solution, cmd_start)
from attn_drill.commands.attempts import cmd_attempts, cmd_repro
from attn_drill.commands.explain import cmd_explain
from attn_drill.commands.practice import cmd_mock, cmd_stats, cmd_watch
from attn_drill.commands.show import PLOT_EXTRA, cmd_show
from attn_drill import i18n
from attn_drill.i18n import t
from attn_drill.say import reset_warnings

NAMES = ("list", "start", "next", "check", "hint", "solution", "repro", "attempts", "reset", "watch", "mock",
         "explain", "show", "stats", "config")


def app_help() -> str:
    return t("help.app")


def epilog() -> str:
    return t("help.epilog")


def commands() -> dict:
    """name: one-line help, for typer's help and for the fast root help alike, in the language in use."""
    return {name: t(f"help.commands.{name}") for name in NAMES}


# Equal to attn_drill.judge.DEFAULT_TIMEOUT (a test keeps them equal): importing the checker would
# slow down --help. `check` reads the real one when it runs.
DEFAULT_TIMEOUT_HELP = 10.0
# The ranges are checked by the commands (commands.valid_seed, valid_number), not by typer's min=/max=:
# theirs would print click's three-line usage block, and would let inf and nan through.
SEED_HELP = "0 to 2**63-1"
TIMEOUT_HELP = f"{TIMEOUT_RANGE[0]:g} to {TIMEOUT_RANGE[1]:g}"
MINUTES_HELP = f"{MINUTES_RANGE[0]:g} to {MINUTES_RANGE[1]:g}"


# -- the typer app ---------------------------------------------------------------------------------
def _complete_ids(incomplete: str) -> List[str]:
    from attn_drill import catalogue

    return [i for i in catalogue.exercises() if i.startswith(incomplete)]


def _fast_help_classes():
    """typer 0.29 coerces every parameter's value through a pydantic adapter (~0.1 s to import
    pydantic), bool values excepted; an absent --help flag has the value None, so `CMD --help` and
    `--version` would pay it too. A False default makes it a bool.

    The group also prints click's usage errors (a bad option, a value that is not a number) as ours:
    one `error:` line and the help command, exit 2."""
    from typer.core import TyperCommand, TyperGroup

    class FastHelp:
        def get_help_option(self, ctx):
            opt = super().get_help_option(ctx)
            if opt is not None and opt.default is None:
                opt.default = False
            if opt is not None:
                opt.help = t("help.help")  # in the language in use
            return opt

    class OneLineErrors:
        def main(self, *args, **kwargs):
            reset_warnings()
            kwargs["standalone_mode"] = False  # click's errors come to us instead of being printed
            try:
                code = super().main(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - only click's own exceptions are handled below
                _click_error(e)
                raise
            raise SystemExit(code if isinstance(code, int) else 0)

    group = type("Group", (OneLineErrors, FastHelp, TyperGroup), {})
    return group, type("Command", (FastHelp, TyperCommand), {})


def _click_error(e: Exception) -> None:
    """Print click's usage error our way and exit 2; anything else is left to the caller."""
    import typer

    usage_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
    if isinstance(e, typer.Abort):
        sys.stderr.write("Aborted!\n")
        raise SystemExit(1)
    if not isinstance(e, usage_error):
        if hasattr(e, "show") and hasattr(e, "exit_code"):  # click's other errors, in click's words
            e.show()
            raise SystemExit(e.exit_code)
        return
    if type(e).__name__ == "NoArgsIsHelpError":  # `attn-drill` alone: the help, as before
        e.show()
        raise SystemExit(e.exit_code)
    from attn_drill.commands.usage import fail as _fail

    where = e.ctx.command_path if e.ctx is not None else "attn-drill"
    from attn_drill.commands.help import usage_error

    _fail(usage_error(e.format_message()), t("usage.try", command=f"{where} --help"))


@lru_cache(maxsize=1)
def get_app():
    """The typer app: parsing and help only; each command calls its cmd_* function."""
    import typer
    from typing import Annotated

    group, command = _fast_help_classes()
    app = typer.Typer(
        cls=group, name="attn-drill", help=app_help(), epilog=epilog(), no_args_is_help=True,
        add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain help: typer's rich help imports markdown-it and pygments (~70 ms)
    )

    def cmd(name: str, more: str = ""):
        short = commands()[name]
        return app.command(name, cls=command, short_help=short, help=short + ("\n\n" + more if more else ""))

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
                                             help=t("help.version"))] = False,
             __: Annotated[bool, typer.Option("--lang", metavar="en|zh", show_default=False, expose_value=False,
                                                help=t("help.lang"))] = False) -> None:
        pass  # --lang is taken off the command line by main(), wherever it is; here for the help's sake


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
        notebook: Annotated[bool, typer.Option(
            "--notebook",
            help="Write DIR/<id>.ipynb instead: the task, the skeleton in a %%attn_check cell, hints.")] = False,
    ) -> None:
        cmd_start(exercise_id, folder, force, notebook=notebook)

    @cmd("next", "Each exercise has a review card (FSRS, as Anki schedules): a pass within the target is "
                 "good, over it hard, a failing check or an abandoned attempt again. A due review starts "
                 "from a fresh skeleton (your file is backed up first); a new exercise starts as start does.")
    def next_() -> None:
        from attn_drill.commands.next import cmd_next

        cmd_next()

    @cmd("check", "Without PATHS, checks the file of the exercise you started last; a PATH that is an exercise's "
                  "ID checks that exercise's file. Several files are a batch: only your own practice files among "
                  "them go into your history. Exit status: 0 if every file passes, 1 if one fails, 2 for a usage "
                  "error (in a batch: a file that could not be checked).")
    def check(
        files: Annotated[Optional[List[Path]], typer.Argument(
            metavar="PATHS", show_default=False, help="Files (or exercise IDs) to check; the exercise started last if left out.")] = None,
        exercise_id: Annotated[Optional[str], typer.Option(
            "--exercise", "-e", metavar="ID", autocompletion=_complete_ids, show_default=False,
            help="The exercise the files are for (default: from each file's name).")] = None,
        as_json: Annotated[bool, typer.Option(
            "--json", help="Print the report as JSON (JSON Lines for several files).")] = False,
        seed: Annotated[Optional[int], typer.Option(
            metavar="N", show_default=False, help=f"Seed for the random cases, to replay a check ({SEED_HELP}).")] = None,
        timeout: Annotated[Optional[float], typer.Option(
            metavar="SECONDS", show_default=False,
            help=f"Time allowed per file (default {DEFAULT_TIMEOUT_HELP:g} s, {TIMEOUT_HELP}).")] = None,
        no_record: Annotated[bool, typer.Option(
            "--no-record", help="Keep this check out of your history and stats.")] = False,
        verbose: Annotated[bool, typer.Option(
            "--verbose", "-v", help="Every stage on a line of its own, with what it checked.")] = False,
        junit: Annotated[Optional[Path], typer.Option(
            "--junit", metavar="FILE", show_default=False,
            help="Also write the verdicts as JUnit XML (one test case per file), for CI systems.")] = None,
    ) -> None:
        raise SystemExit(cmd_check(files or [], exercise_id, as_json, seed, timeout, verbose, record=not no_record,
                                   junit=junit))

    @cmd("hint", "Hints build up: each call shows one more, remembered per exercise.")
    def hint(exercise_id: OptId = None,
             show_all: Annotated[bool, typer.Option("--all", help="Show every hint now.")] = False) -> None:
        cmd_hint(exercise_id, show_all)

    @cmd("solution", "Before you have passed the exercise it asks to confirm; with no terminal to ask on "
                     "it refuses unless you give --yes. Piped or redirected, it prints plain Python "
                     "(attn-drill solution mha --yes > mha_answer.py).")
    def solution(exercise_id: OptId = None, yes: Yes = False,
                 diff: Annotated[bool, typer.Option(
                     "--diff", help="Show it as a diff against your file (+ lines are the model answer's).")] = False,
                 ) -> None:
        cmd_solution(exercise_id, yes, diff)

    @cmd("repro", "Writes attn-practice/repro/<exercise>_<seed>.py: the case your last failing check got "
                  "wrong, rebuilt from its seed. Run it with python: it runs your file and the model answer "
                  "(its numbers, never its code) and prints yours against the expected where they first differ.")
    def repro(exercise_id: OptId = None) -> None:
        cmd_repro(exercise_id)

    @cmd("attempts", "Every checked version of your practice file is kept, once per content, with its verdict. "
                     "Without N it lists them; with N it prints that version; --diff compares it with your file.")
    def attempts(exercise_id: OptId = None,
                 number: Annotated[Optional[int], typer.Argument(
                     metavar="[N]", show_default=False, help="The attempt's number (the list shows them).")] = None,
                 diff: Annotated[bool, typer.Option(
                     "--diff", help="Show attempt N as a diff against your file now.")] = False) -> None:
        cmd_attempts(exercise_id, number, diff)

    @cmd("reset", "Your file is copied to the backups folder first (the path is printed) and the clock "
                  "restarts. Asks to confirm; with no terminal to ask on it refuses unless you give --yes.")
    def reset(exercise_id: Id, yes: Yes = False) -> None:
        cmd_reset(exercise_id, yes)

    Seed = Annotated[Optional[int], typer.Option(
        metavar="N", show_default=False, help=f"Seed for the random cases (default: a new one each check; {SEED_HELP}).")]
    Timeout = Annotated[Optional[float], typer.Option(
        metavar="SECONDS", show_default=False,
        help=f"Time allowed per check (default {DEFAULT_TIMEOUT_HELP:g} s, {TIMEOUT_HELP}).")]

    @cmd("watch", "Watches the file of the exercise (the one started last if no ID) and shows the latest "
                  "report after each save. Each check runs your code in a fresh process. Ctrl-C stops.")
    def watch(exercise_id: OptId = None, seed: Seed = None, timeout: Timeout = None) -> None:
        raise SystemExit(cmd_watch(exercise_id, seed, timeout))

    @cmd("mock", "Picks an exercise (untried and weakest first) unless --exercise, writes a fresh file in "
                 "attn-practice/mock/ (your practice file is never touched) and counts down from its target "
                 "time. Every save is checked; it ends on a pass, at time-out or when you press q. Then "
                 "follow-up questions (after a pass, 4-5 about your own file, as attn-drill explain asks) and a "
                 "scorecard, kept in your history (attn-drill stats). "
                 "Ctrl-C leaves it: the clock keeps running and attn-drill mock resumes it. Exit status: "
                 "0 if you passed, 1 if not, 130 when left for later.")
    def mock(
        exercise_id: Annotated[Optional[str], typer.Option(
            "--exercise", "-e", metavar="ID", autocompletion=_complete_ids, show_default=False,
            help="The exercise (default: picked from your history).")] = None,
        minutes: Annotated[Optional[float], typer.Option(
            metavar="N", show_default=False, help=f"Minutes on the clock (default: the target time; {MINUTES_HELP}).")] = None,
        strict: Annotated[bool, typer.Option(
            "--strict", help="Whiteboard style: no hints, no feedback until one check at the end.")] = False,
        seed: Annotated[Optional[int], typer.Option(
            metavar="N", show_default=False, help=f"Seed for the pick, the questions and the checks ({SEED_HELP}).")] = None,
        answers: Annotated[Optional[str], typer.Option(
            metavar="1,3,2", show_default=False,
            help="Answers to the follow-up questions, for scripts (no keyboard needed): choice numbers, and "
                 "shapes in symbols (\"B H Tq Tk,2,1\").")] = None,
        abandon: Annotated[bool, typer.Option(
            "--abandon", help="Drop the mock in progress (its file stays) and exit.")] = False,
    ) -> None:
        raise SystemExit(cmd_mock(exercise_id, minutes, strict, seed, answers, abandon))

    @cmd("explain", "Checks the file of the exercise (the one started last if no ID): it must pass. Then 4-5 "
                    "questions about your own lines: the shape a line makes (typed in symbols, B H Tq Tk), what a "
                    "tensor costs at real sizes, why a line does what it does, what breaks if it changes. Each "
                    "answer is explained at once; the round goes into your history (attn-drill stats). Without a "
                    "terminal give --answers, or --json to print the questions. Exit status: 0 after the round, "
                    "1 if the file does not pass, 2 for a usage error.")
    def explain(
        exercise_id: OptId = None,
        answers: Annotated[Optional[str], typer.Option(
            metavar='"B H T d,2,1"', show_default=False,
            help="The answers, in order, separated by commas (by ; if a shape keeps its commas): shapes in "
                 "symbols, choices by number. For scripts: no terminal needed.")] = None,
        as_json: Annotated[bool, typer.Option(
            "--json", help="Print the round as JSON (with --answers: what you gave and whether it was right).")] = False,
        seed: Annotated[Optional[int], typer.Option(
            metavar="N", show_default=False, help=f"Seed for the case and the questions ({SEED_HELP}).")] = None,
        timeout: Timeout = None,
    ) -> None:
        raise SystemExit(cmd_explain(exercise_id, answers, as_json, seed, timeout))

    @cmd("show", "Runs your file (the exercise started last if no ID; passing or not) on one seeded example, in "
                 "a process of its own as check does, and draws every head's weights beside the reference's: "
                 "each query's strongest key, each head's entropy, and where yours differs. For a Transformer "
                 "layer, every attention sub-layer. Exit status: 0 when drawn, 1 if your code cannot run, 2 for "
                 "a usage error.")
    def show(
        exercise_id: OptId = None,
        png: Annotated[Optional[Path], typer.Option(
            "--png", metavar="FILE", show_default=False,
            help=f"Also write the maps as an image (needs matplotlib: {PLOT_EXTRA}).")] = None,
        seed: Annotated[Optional[int], typer.Option(
            metavar="N", show_default=False, help=f"Seed for the example (default 0; {SEED_HELP}).")] = None,
        timeout: Timeout = None,
    ) -> None:
        raise SystemExit(cmd_show(exercise_id, png, seed, timeout))

    @cmd("stats", "Per exercise: attempts, passes, best and median solve time, the most frequent mistakes; "
                  "then recent mock scores and their trend. From the history of every check and mock.")
    def stats(as_json: Annotated[bool, typer.Option("--json", help="Print the same data as JSON.")] = False) -> None:
        cmd_stats(as_json)

    @cmd("config", t("help.config_more"))
    def config(key: Annotated[Optional[str], typer.Argument(metavar="[KEY]", show_default=False)] = None,
               value: Annotated[Optional[str], typer.Argument(metavar="[VALUE]", show_default=False)] = None) -> None:
        from attn_drill.commands.config import cmd_config

        cmd_config(key, value)

    return app


# -- the fast path ---------------------------------------------------------------------------------
def root_help(width: int = 80) -> str:
    """The same text as typer's root --help (a test holds them equal), without importing typer."""
    from attn_drill.say import fill

    w = min(width, 80) - 2
    wrap = lambda text: fill(text, w, "  ")  # noqa: E731
    cmds = commands()
    name_w = max(map(len, cmds))
    options = [("--version", t("help.version")), ("--lang", t("help.lang")), ("-h, --help", t("help.help"))]
    opt_w = max(len(o) for o, _ in options)
    lines = [t("help.usage"), "", wrap(app_help()), "", t("help.options")]
    for o, h in options:
        body = fill(h, w - opt_w - 2).split("\n")
        lines += [f"  {o:<{opt_w}}  {body[0]}"] + [" " * (opt_w + 4) + b for b in body[1:]]
    lines += ["", t("help.commands_title")]
    lines += [f"  {name:<{name_w}}  {text}" for name, text in cmds.items()]
    lines += ["", wrap(epilog())]
    return "\n".join(lines) + "\n"


def _take_lang(argv: List[str]) -> tuple:
    """(argv without --lang X / --lang=X, X or None); everything after `--` is left alone."""
    rest, flag, i = [], None, 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest += argv[i:]
            break
        if a == "--lang" or a.startswith("--lang="):
            flag = a.partition("=")[2] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
            i += 1 if "=" in a else 2
            if flag not in i18n.LANGS:
                from attn_drill.commands.usage import fail

                fail(t("usage.bad_lang", value=flag), t("usage.try", command="attn-drill --help"))
            continue
        rest.append(a)
        i += 1
    return rest, flag


def _fast_path(argv: List[str]) -> bool:
    """Answer the root help and the plain forms of `list`, `start`, `hint` and `check` without typer (whose
    parameter parsing imports pydantic: ~0.2 s, before a check's worker even starts); False for anything else,
    which typer parses (and explains)."""
    if argv == ["list"]:
        cmd_list()
        return True
    if argv == ["next"]:
        from attn_drill.commands.next import cmd_next

        cmd_next()
        return True
    if argv in (["--help"], ["-h"]):
        import shutil

        sys.stdout.write(root_help(shutil.get_terminal_size().columns))
        return True
    if argv[:1] == ["start"]:
        parsed = _plain(argv[1:], flags={"--force"}, options={"--dir"})
        if parsed and len(parsed[0]) == 1:
            (exercise_id,), flags, options = parsed
            folder = options.get("--dir")
            cmd_start(exercise_id, Path(folder) if folder else None, "--force" in flags)
            return True
    if argv[:1] == ["check"]:  # the plain forms; a --seed or --timeout that is not plainly a number goes to typer
        parsed = _plain(argv[1:], flags={"--json", "--no-record", "-v", "--verbose"},
                        options={"-e", "--exercise", "--seed", "--timeout"})
        seed, timeout = (parsed[2].get(o) for o in ("--seed", "--timeout")) if parsed else (None, None)
        if parsed and _digits(seed) and _digits(timeout, point=True):
            paths, flags, options = parsed
            exercise_id = options.get("--exercise", options.get("-e"))
            raise SystemExit(cmd_check([Path(p) for p in paths], exercise_id, "--json" in flags,
                                       None if seed is None else int(seed), None if timeout is None else float(timeout),
                                       bool(flags & {"-v", "--verbose"}), record="--no-record" not in flags))
    if argv[:1] == ["hint"]:
        parsed = _plain(argv[1:], flags={"--all"}, options=set())
        if parsed and len(parsed[0]) <= 1:
            ids, flags, _ = parsed
            cmd_hint(ids[0] if ids else None, "--all" in flags)
            return True
    return False


def _digits(value: Optional[str], point: bool = False) -> bool:
    """An absent option, or one written as plain digits (with one decimal point where `point`): what int() and
    float() read the same way typer would. Anything else (signs, underscores, 1e3) is typer's to read or refuse."""
    if value is None:
        return True
    whole, dot, part = value.partition(".") if point else (value, "", "")
    return whole.isascii() and whole.isdigit() and (not dot or part == "" or (part.isascii() and part.isdigit()))


def _plain(args: List[str], flags: set, options: set):
    """(positionals, flags, {option: value}) when `args` holds nothing but those; None for anything else."""
    positionals, seen, values = [], set(), {}
    it = iter(args)
    for a in it:
        name, eq, value = a.partition("=")
        if a in flags:
            seen.add(a)
        elif name in options:
            value = value if eq else next(it, None)
            if value is None or value.startswith("-"):
                return None
            values[name] = value
        elif a.startswith("-") or not a:
            return None
        else:
            positionals.append(a)
    return positionals, seen, values


def main() -> None:
    reset_warnings()
    try:
        i18n.reset()
        argv, flag = _take_lang(sys.argv[1:])
        i18n.use(i18n.choose(flag))
        i18n.flagged = flag is not None
        sys.argv[1:] = argv
        if not _fast_path(argv):
            if i18n.zh():  # typer's help and click's own words in Chinese
                import typer.main

                from attn_drill.commands.help import localise

                group = typer.main.get_command(get_app())
                localise(group)
                group(prog_name="attn-drill")
            else:
                get_app()(prog_name="attn-drill")
    except BrokenPipeError:  # `attn-drill list | head -1`: the reader left, so there is nobody to tell
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush must not fail again
        raise SystemExit(1)
