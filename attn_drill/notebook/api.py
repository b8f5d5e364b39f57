"""`ad.check`, `ad.hint`, `ad.solution` and the `%%attn_check` cell magic. No torch in the kernel's process.

Each check writes the code as a file under the attn-drill home (notebook/<exercise>.py) and runs it through
the CLI's runner: a fresh sandboxed process per check, forked from a warm server that this kernel keeps (torch
imported once; it never touches a GPU, see process/gpu.py), so every check after the first costs little.
"""

from __future__ import annotations

import atexit
import shlex
import sys

from attn_drill import catalogue, paths
from attn_drill.notebook import source as sources
from attn_drill.notebook.result import CheckResult, ShownMaps

_pool = None  # the kernel's warm server, started on the first check


def _exercise(exercise_id: str):
    from attn_drill.commands import resolve

    ex = resolve.find(exercise_id)  # ids as the CLI takes them (case, underscores)
    if ex is None:
        close = resolve.suggest(exercise_id)
        hint = f"; did you mean {close.id!r}?" if close else f": one of {', '.join(catalogue.exercises())}"
        raise ValueError(f"no exercise called {exercise_id!r}{hint}")
    return ex


def _spawn(exercise_id: str):
    global _pool
    from attn_drill.process import warm

    if _pool is None or _pool.failed:
        _pool = warm.WarmPool([exercise_id])
        _pool.start()
        atexit.register(_pool.close)
    return _pool.spawn


def _source_for(ex, obj, namespace: dict | None) -> str:
    """The file to run: `obj`'s cell (and the exercise's other names from the notebook), or the names alone."""
    found = _namespace(namespace)
    if obj is not None:
        defined = getattr(obj, "__name__", "")
        objects = {name: found[name] for name in ex.names if name in found and name != defined}
        objects[defined if defined in ex.names else ex.names[0]] = obj
        return sources.of_objects(objects)
    missing = [n for n in ex.names if n not in found]
    if missing:
        raise NameError(f"{ex.id} needs {', '.join(missing)} defined in the notebook (or pass one: "
                        f"ad.check({ex.id!r}, your_function_or_class))")
    return sources.of_objects({name: found[name] for name in ex.names})


def _written(ex, text: str):
    from attn_drill.store.atomic import write_atomic

    path = paths.home() / "notebook" / ex.file
    write_atomic(path, text.encode("utf-8"))
    return path


def show(exercise: str, obj=None, *, seed: int | None = None, namespace: dict | None = None) -> ShownMaps:
    """Every head's attention weights, yours beside the reference's, on one example (as `attn-drill show`):
    shown inline as the text maps, and as an image where matplotlib is installed."""
    from attn_drill.process import runner

    ex = _exercise(exercise)
    path = _written(ex, _source_for(ex, obj, namespace))
    seed = 0 if seed is None else seed
    result = runner.run_task(runner.Job(path, ex.id, task="maps"), seed, runner.DEFAULT_TIMEOUT, spawn=_spawn(ex.id))
    return ShownMaps(ex.id, result, seed)


def check(exercise: str, obj=None, *, seed: int | None = None, record: bool = True, strict: bool = False,
          namespace: dict | None = None) -> CheckResult:
    """Check `obj` (a function or class defined in the notebook; its cell's definitions come with it) for
    `exercise`, or, without it, the exercise's names as the notebook defines them now. `strict`: raise
    AssertionError with the report unless it passes (nbgrader, CI). `namespace`: where to look the names up
    (default: the notebook's, or the caller's globals)."""
    ex = _exercise(exercise)
    return check_source(ex.id, _source_for(ex, obj, namespace), seed=seed, record=record, strict=strict)


def check_source(exercise: str, text: str, *, seed: int | None = None, record: bool = True,
                 strict: bool = False) -> CheckResult:
    """Check `text` as a whole file (what `%%attn_check` does with its cell)."""
    from attn_drill.process import runner

    ex = _exercise(exercise)
    data = text.encode("utf-8")
    path = _written(ex, text)
    rep = next(runner.run_checks([runner.Job(path, ex.id)], seed=seed, spawn=_spawn(ex.id)))
    if record:
        from attn_drill.practice import record as recording

        recording.after_check(ex, path, rep, source="notebook", attempt=recording.Clock(None, None), data=data)
    result = CheckResult(rep, text)
    if strict and not result.passed:
        raise AssertionError(str(result))
    return result


def notebook_namespace() -> dict | None:
    """The running IPython kernel's (or shell's) user namespace, if there is one."""
    if "IPython" not in sys.modules:  # never imported: no shell is running
        return None
    from IPython import get_ipython

    shell = get_ipython()
    return shell.user_ns if shell is not None else None


def _namespace(given: dict | None) -> dict:
    return given if given is not None else (notebook_namespace() or sys._getframe(3).f_globals)


def hint(exercise: str, all: bool = False) -> str:
    """The next hint for `exercise` (the ones for your last mistake first), as `attn-drill hint` gives it."""
    from attn_drill.practice import hints
    from attn_drill.store import state

    ex = _exercise(exercise)
    with state.edit() as st:
        shown = hints.reveal(ex, st, all)
    lines = [f"For {shown.slug}: {h}" for h in shown.mistake] + list(ex.hints[:shown.general])
    if not lines:
        return f"{ex.id} has no hints."
    return "\n".join(f"{i}. {h}" for i, h in enumerate(lines, 1))


def solution(exercise: str, *, yes: bool = False) -> str:
    """The model answer's code; before you have passed the exercise, only with yes=True (it spoils the drill)."""
    from attn_drill.store import history

    ex = _exercise(exercise)
    if not yes and not history.progress_of(ex.id).passed:
        raise PermissionError(f"you have not passed {ex.id} yet, and seeing the answer spoils the drill: "
                              f"ad.hint({ex.id!r}) gives a nudge; ad.solution({ex.id!r}, yes=True) shows it anyway")
    return ex.reference.read_text(encoding="utf-8")


# -- the cell magic -------------------------------------------------------------------------------------------
def attn_check(line: str, cell: str) -> CheckResult:
    """%%attn_check EXERCISE [--seed N] [--no-record] [--strict]: check this cell's code as a file of its own (a
    fresh namespace: nothing from earlier cells leaks in). Shows the report and returns the result (`_`)."""
    words = shlex.split(line)
    usage = "usage: %%attn_check EXERCISE [--seed N] [--no-record] [--strict]"
    if not words or words[0].startswith("-"):
        raise ValueError(usage)
    exercise, seed, record, strict, rest = words[0], None, True, False, words[1:]
    while rest:
        word = rest.pop(0)
        if word == "--seed" and rest and rest[0].isdigit():
            seed = int(rest.pop(0))
        elif word == "--no-record":
            record = False
        elif word == "--strict":
            strict = True
        else:
            raise ValueError(f"{usage} (not {word!r})")
    return check_source(exercise, cell, seed=seed, record=record, strict=strict)


def load_ipython_extension(ipython) -> None:
    """`%load_ext attn_drill`: registers %%attn_check."""
    ipython.register_magic_function(attn_check, magic_kind="cell", magic_name="attn_check")
