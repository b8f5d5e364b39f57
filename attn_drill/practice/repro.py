"""`attn-drill repro`: write the failing case of the last failing check as a script you can run. No torch.

The script (attn-practice/repro/<exercise>_<seed>.py, beside your practice file) rebuilds the check's case
from its seed with the checker's own case builder (attn_drill.judge.replay), so every number is the same;
it imports your file and calls it as the checker does, runs the model answer on the same inputs and
weights, and prints yours against the expected at the first mismatch. It prints numbers only, never the
model answer's code: so, unlike `solution`, it needs no confirmation before a pass.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from attn_drill import paths
from attn_drill.store.atomic import write_atomic

TEMPLATE = '''\
"""The failing case of your last check of {exercise}, to run and poke at:

    {command}

{detail_wrapped}

attn-drill repro wrote this. It builds the checker's own case from the seed (the same inputs and
weights), runs your file on it as the checker does, runs the model answer on the same numbers, and
prints yours against the expected where they first differ. The model answer's code is not shown.
Edit your file and run this again; `python -i` keeps the tensors at hand.
"""
import sys
from pathlib import Path

try:
    from attn_drill.judge import replay
except ImportError:  # a python without attn-drill: use the one attn-drill was run from
    sys.path.insert(0, {package!r})
    from attn_drill.judge import replay

EXERCISE = {exercise!r}
SEED = {seed}  # the check's seed: every input and weight comes from it
CASE = {case}  # case {case_1} of the check, where its {stage} stage failed
YOUR_FILE = Path({file!r})

case = replay.build_case(EXERCISE, SEED, CASE)  # case.inputs, case.dims (and case.params for a module)
replay.describe(EXERCISE, case, CASE)

yours = replay.run_yours(EXERCISE, YOUR_FILE, case)  # your outputs, as a tuple (out, weights...)
expected = replay.run_model_answer(EXERCISE, case)  # the model answer's, on the same numbers

if __name__ == "__main__":
    sys.exit(replay.compare(EXERCISE, yours, expected))
'''


def in_docstring(text: str) -> str:
    """`text` as it may stand inside the script's docstring: every backslash and double quote escaped, so that
    no name (a folder whose name holds three double quotes, then code) can end the docstring early and run."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def script_path(practice_file: Path, exercise_id: str, seed: int) -> Path:
    """attn-practice/repro/<exercise>_<seed>.py, in the folder of the practice file."""
    return Path(practice_file).parent / "repro" / f"{exercise_id.replace('-', '_')}_{seed}.py"


def python_command() -> str:
    """`python` when that is the interpreter attn-drill runs under, else that interpreter's path."""
    found = shutil.which("python")
    same = found and Path(found).resolve() == Path(sys.executable).resolve()
    return "python" if same else sys.executable


def write(exercise_id: str, failure, nice) -> tuple[Path, str]:
    """Write the script for `failure` (attempts.Failure, with a case): (its path, the command that runs it).
    `nice` shortens a path for showing (relative to the current folder)."""
    import textwrap

    from attn_drill.say import printable

    target = script_path(Path(failure.file), exercise_id, failure.seed)
    command = f"{shlex.quote(python_command())} {shlex.quote(str(nice(target)))}"  # pasted into a shell as it is
    detail = textwrap.fill(f"The check (seed {failure.seed}) failed at {failure.stage}: {printable(failure.detail)}", 96)
    text = TEMPLATE.format(
        exercise=exercise_id, seed=failure.seed, case=failure.case, case_1=failure.case + 1,
        stage=failure.stage, file=str(failure.file), package=str(paths.PACKAGE.parent),
        command=in_docstring(printable(command)), detail_wrapped=in_docstring(detail))
    write_atomic(target, text.encode("utf-8"))
    return target, command
