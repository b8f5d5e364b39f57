"""The command line, through typer's CliRunner (no terminal: confirmations refuse) and, for the
things only a real process shows (the installed script, python -m, what gets imported), subprocesses.

The `check` tests run the real checker worker: nothing is mocked.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attn_drill import catalogue, cli, paths
from attn_drill.commands import drill as commands
from attn_drill.store import history, state

MHA = catalogue.get("mha")
SDPA = catalogue.get("sdpa")


def invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(cli.get_app(), list(args), input=input)


def started_at(exercise_id: str) -> str:
    return state.load().peek(exercise_id)["started_at"]


def set_started_at(exercise_id: str, stamp: str) -> None:
    with state.edit() as st:
        st.entry(exercise_id)["started_at"] = stamp


# -- help and list ---------------------------------------------------------------------------------
def test_help_lists_every_command_with_a_line():
    r = invoke("--help")
    assert r.exit_code == 0
    for name, line in cli.commands().items():
        assert f"  {name}" in r.stdout and line in r.stdout
    registered = {c.name for c in cli.get_app().registered_commands}
    assert registered == set(cli.commands())


def test_the_fast_root_help_is_typers_help():
    assert cli.root_help(80) == invoke("--help").stdout


@pytest.mark.parametrize("command", list(cli.commands()))
def test_each_command_has_help(command):
    r = invoke(command, "--help")
    assert r.exit_code == 0 and cli.commands()[command] in r.stdout


def test_version():
    from attn_drill import __version__

    r = invoke("--version")
    assert r.exit_code == 0 and __version__ in r.stdout


def test_help_states_the_checkers_default_timeout():
    from attn_drill.process import DEFAULT_TIMEOUT

    assert cli.DEFAULT_TIMEOUT_HELP == DEFAULT_TIMEOUT
    assert f"default {DEFAULT_TIMEOUT:g} s" in invoke("check", "--help").stdout


def test_list_shows_every_exercise_as_new(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # wide: every title on one line
    r = invoke("list")
    assert r.exit_code == 0
    for ex in catalogue.exercises().values():
        assert ex.id in r.stdout and ex.title in r.stdout and f"{ex.minutes} min" in r.stdout
    assert "started" not in r.stdout and "passed" not in r.stdout
    assert "attn-drill start" in r.stdout


def test_list_fits_80_columns_with_titles_wrapped_between_words(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = invoke("list").stdout
    assert max(map(len, out.splitlines())) <= 80
    flat = " ".join(out.split())
    for ex in catalogue.exercises().values():  # a title's words in order, each whole, its row's id first
        words = ex.title.split()
        assert re.search(re.escape(ex.id) + r" " + r" (?:\S+ )*?".join(map(re.escape, words)), flat), ex.title


@pytest.mark.parametrize("exercise_id", list(catalogue.exercises()))
def test_start_fits_80_columns_wrapping_between_words(exercise_id, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    r = invoke("start", exercise_id)
    assert r.exit_code == 0 and max(map(len, r.stdout.splitlines())) <= 80
    ex = catalogue.get(exercise_id)
    assert " ".join(ex.task.split()) in " ".join(r.stdout.split())  # every word of the task, whole, in order


def test_list_shows_progress():
    invoke("start", "mha")
    history.record_check("sdpa", passed=True, slugs=[], attempt="a", solve_seconds=180.0)
    history.record_check("sdpa", passed=True, slugs=[], attempt="b", solve_seconds=125.0)
    out = invoke("list").stdout
    mha_row = next(line for line in out.splitlines() if " mha " in line)
    sdpa_row = next(line for line in out.splitlines() if " sdpa " in line)
    assert "started" in mha_row and "▸" in mha_row
    assert "passed" in sdpa_row and "2m 05s" in sdpa_row
    assert "current: mha" in out


# -- start -----------------------------------------------------------------------------------------
def test_start_writes_the_skeleton_and_shows_the_task(isolated):
    r = invoke("start", "mha")
    assert r.exit_code == 0, r.output
    target = isolated / "attn-practice" / "mha.py"
    assert target.read_bytes() == MHA.skeleton.read_bytes()
    assert MHA.task.splitlines()[0] in r.stdout
    assert "target 5 min" in r.stdout and "attn-drill check" in r.stdout
    assert "attn-practice/mha.py" in r.stdout
    st = state.load()
    assert st.current == "mha" and st.file("mha") == target and started_at("mha")


def test_start_again_never_overwrites(isolated):
    invoke("start", "mha")
    target = isolated / "attn-practice" / "mha.py"
    target.write_text("# my work\n")
    invoke("start", "sdpa")
    r = invoke("start", "mha")
    assert r.exit_code == 0
    assert target.read_text() == "# my work\n"
    assert "already exists" in r.stdout and "attn-practice/mha.py" in r.stdout
    assert state.load().current == "mha"


def test_start_again_keeps_the_clock():
    invoke("start", "mha")
    set_started_at("mha", "2020-01-01T00:00:00+00:00")
    invoke("start", "mha")
    assert started_at("mha") == "2020-01-01T00:00:00+00:00"


def test_start_force_backs_up_then_starts_over(isolated, home):
    invoke("start", "mha")
    target = isolated / "attn-practice" / "mha.py"
    target.write_text("# my work\n")
    set_started_at("mha", "2020-01-01T00:00:00+00:00")
    r = invoke("start", "mha", "--force")
    assert r.exit_code == 0, r.output
    (backup,) = (home / "backups" / "mha").iterdir()
    assert backup.read_text() == "# my work\n"
    assert str(backup) in r.stdout
    assert target.read_bytes() == MHA.skeleton.read_bytes()
    assert started_at("mha") != "2020-01-01T00:00:00+00:00"


def test_start_dir(isolated):
    r = invoke("start", "sdpa", "--dir", "drills")
    assert r.exit_code == 0
    assert (isolated / "drills" / "sdpa.py").read_bytes() == SDPA.skeleton.read_bytes()
    assert state.load().file("sdpa") == isolated / "drills" / "sdpa.py"


def test_start_unknown_id_suggests_and_lists():
    r = invoke("start", "mah")
    assert r.exit_code == 2
    assert "did you mean mha?" in r.stderr
    listed = r.stderr.splitlines()[1]
    assert len(listed) <= 80  # as many ids as fit one line, then where to see them all
    assert all(ex_id in listed for ex_id in catalogue.exercises()) or listed.endswith("(attn-drill list)")
    assert not Path("attn-practice").exists()


def test_start_with_a_folder_in_the_way_is_a_usage_error(isolated):
    (isolated / "attn-practice" / "mha.py").mkdir(parents=True)
    r = invoke("start", "mha")
    assert r.exit_code == 2 and "is a folder" in r.stderr


# -- hint ------------------------------------------------------------------------------------------
def test_hints_come_one_at_a_time():
    invoke("start", "sdpa")
    n = len(SDPA.hints)
    for i in range(1, n + 1):
        r = invoke("hint")
        assert r.exit_code == 0
        assert f"hint {i}/{n}" in r.stdout and f"hint {i + 1}/{n}" not in r.stdout
        assert SDPA.hints[i - 1][:40] in r.stdout
    assert "last hint" in r.stdout
    r = invoke("hint")
    assert "No more hints" in r.stdout and all(f"hint {i}/{n}" in r.stdout for i in range(1, n + 1))
    assert state.load().hints_shown("sdpa") == n


def test_hints_are_remembered_per_exercise():
    invoke("hint", "mha")
    invoke("hint", "mha")
    r = invoke("hint", "sdpa")
    assert f"hint 1/{len(SDPA.hints)}" in r.stdout and "hint 2/" not in r.stdout
    assert state.load().hints_shown("mha") == 2


def test_hint_all():
    r = invoke("hint", "mha", "--all")
    assert r.exit_code == 0
    assert all(h[:40] in r.stdout for h in MHA.hints)
    assert state.load().hints_shown("mha") == len(MHA.hints)


def test_hint_needs_an_exercise():
    r = invoke("hint")
    assert r.exit_code == 2 and "no exercise started yet" in r.stderr


# -- solution --------------------------------------------------------------------------------------
REFERENCE_LINE = "class MultiHeadAttention"


def test_solution_without_a_terminal_refuses():
    r = invoke("solution", "mha")
    assert r.exit_code == 2
    assert "--yes" in r.stderr
    assert REFERENCE_LINE not in r.stdout


@pytest.mark.parametrize("answer, shown, code", [("y\n", True, 0), ("n\n", False, 1), ("\n", False, 1)])
def test_solution_asks_on_a_terminal(monkeypatch, answer, shown, code):
    monkeypatch.setattr(commands, "_interactive", lambda: True)
    r = invoke("solution", "mha", input=answer)
    assert "not passed mha yet" in r.stdout
    assert r.exit_code == code and (REFERENCE_LINE in r.stdout) == shown


def test_solution_yes_shows_the_reference():
    r = invoke("solution", "mha", "--yes")
    assert r.exit_code == 0
    assert REFERENCE_LINE in r.stdout
    assert not history.progress_of("mha").passed  # seeing the answer is not passing
    assert "passed" not in next(line for line in invoke("list").stdout.splitlines() if " mha " in line)


def test_solution_after_a_pass_asks_nothing():
    history.record_check("mha", passed=True, slugs=[])
    r = invoke("solution", "mha")
    assert r.exit_code == 0 and REFERENCE_LINE in r.stdout


def test_solution_defaults_to_the_current_exercise():
    invoke("start", "mha")
    r = invoke("solution", "--yes")
    assert r.exit_code == 0 and REFERENCE_LINE in r.stdout


def test_solution_unknown_id():
    assert invoke("solution", "nope", "--yes").exit_code == 2


# -- reset -----------------------------------------------------------------------------------------
def test_reset_without_a_terminal_refuses_and_changes_nothing(isolated):
    invoke("start", "mha")
    target = isolated / "attn-practice" / "mha.py"
    target.write_text("# my work\n")
    r = invoke("reset", "mha")
    assert r.exit_code == 2 and "--yes" in r.stderr
    assert target.read_text() == "# my work\n"


def test_reset_asks_on_a_terminal(monkeypatch, isolated, home):
    monkeypatch.setattr(commands, "_interactive", lambda: True)
    invoke("start", "mha")
    target = isolated / "attn-practice" / "mha.py"
    target.write_text("# my work\n")
    r = invoke("reset", "mha", input="n\n")
    assert r.exit_code == 1 and target.read_text() == "# my work\n"
    r = invoke("reset", "mha", input="y\n")
    assert r.exit_code == 0 and target.read_bytes() == MHA.skeleton.read_bytes()
    (backup,) = (home / "backups" / "mha").iterdir()
    assert backup.read_text() == "# my work\n"


def test_reset_yes_backs_up_and_restores(isolated, home):
    invoke("start", "mha", "--dir", "drills")
    target = isolated / "drills" / "mha.py"  # the recorded file, not ./attn-practice
    target.write_text("# my work\n")
    set_started_at("mha", "2020-01-01T00:00:00+00:00")
    r = invoke("reset", "mha", "--yes")
    assert r.exit_code == 0, r.output
    (backup,) = (home / "backups" / "mha").iterdir()
    assert backup.read_text() == "# my work\n" and str(backup) in r.stdout
    assert target.read_bytes() == MHA.skeleton.read_bytes()
    assert started_at("mha") != "2020-01-01T00:00:00+00:00"
    assert not (isolated / "attn-practice").exists()


def test_reset_of_a_missing_file_just_writes_the_skeleton(isolated):
    r = invoke("reset", "sdpa")
    assert r.exit_code == 0
    assert (isolated / "attn-practice" / "sdpa.py").read_bytes() == SDPA.skeleton.read_bytes()
    assert state.load().current == "sdpa"


def test_reset_needs_an_id():
    assert invoke("reset").exit_code == 2


# -- check: usage errors ---------------------------------------------------------------------------
def test_check_with_nothing_started():
    r = invoke("check")
    assert r.exit_code == 2 and "no exercise started yet" in r.stderr


def test_check_missing_file():
    r = invoke("check", "nope/mha.py")
    assert r.exit_code == 2 and "no such file" in r.stderr


def test_check_a_folder(isolated):
    (isolated / "attn-practice").mkdir()
    r = invoke("check", "attn-practice")
    assert r.exit_code == 2 and "is a folder" in r.stderr


def test_check_cannot_infer_the_exercise(isolated):
    (isolated / "attention.py").write_text("")
    r = invoke("check", "attention.py")
    assert r.exit_code == 2 and "--exercise" in r.stderr


def test_check_unknown_exercise(isolated):
    (isolated / "mha.py").write_text("")
    r = invoke("check", "mha.py", "--exercise", "mhaa")
    assert r.exit_code == 2 and "did you mean mha?" in r.stderr


def test_check_when_the_started_file_is_gone(isolated):
    invoke("start", "mha")
    (isolated / "attn-practice" / "mha.py").unlink()
    r = invoke("check")
    assert r.exit_code == 2 and "is gone" in r.stderr


def test_check_bad_option_values():
    assert invoke("check", "--timeout", "0").exit_code == 2
    assert invoke("check", "--seed", "-1").exit_code == 2


# -- check: for real (runs the checker worker) -----------------------------------------------------
def copy_reference(folder: Path, name: str = "mha.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(paths.REFERENCE / "mha.py", folder / name))


def copy_skeleton(folder: Path, name: str = "mha.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(paths.EXERCISES / "mha.py", folder / name))


def test_check_the_reference_passes(isolated):
    f = copy_reference(isolated / "good")
    r = invoke("check", str(f), "--seed", "0")
    assert r.exit_code == 0, r.output
    assert "PASSED" in r.stdout and "replay with --seed 0" in r.stdout
    assert history.progress_of("mha").passed


def copy_unscaled(folder: Path, name: str = "mha.py") -> Path:
    """The model answer without its 1/sqrt(d): a missing-scale."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (paths.REFERENCE / "mha.py").read_text()
    assert " / math.sqrt(d)" in text
    (folder / name).write_text(text.replace(" / math.sqrt(d)", ""))
    return folder / name


def test_check_a_wrong_file_fails(isolated):
    f = copy_unscaled(isolated / "bad")
    r = invoke("check", str(f), "--seed", "0")
    assert r.exit_code == 1, r.output
    assert "FAILED" in r.stdout and "attn-drill hint mha" in r.stdout
    (h,) = history.checks("mha")
    assert h["passed"] is False and h["seed"] == 0 and h["slugs"] == ["missing-scale"]


def test_a_file_with_one_todo_left_is_not_started(isolated):
    """masks, two of three functions written: the third's TODO still raises where the cases reach it."""
    ref = catalogue.get("masks").reference.read_text()
    todo = '    # TODO: combine the two, with a head axis\n    raise NotImplementedError("write attention_mask")\n'
    head, body = ref.split("def attention_mask(", 1)
    rest = body.split("\ndef ", 1)
    f = isolated / "masks.py"
    f.write_text(head + "def attention_mask(" + rest[0].split("\n", 1)[0] + "\n" + todo
                 + ("\ndef " + rest[1] if len(rest) > 1 else ""))
    r = invoke("check", str(f), "--seed", "0")
    assert r.exit_code == 1 and "NOT STARTED  masks  fill in the TODOs" in r.stdout, r.stdout
    assert "exception" not in r.stdout and history.checks("masks") == []


def test_the_skeleton_is_not_started_not_an_error(isolated):
    f = copy_skeleton(isolated / "bad")
    r = invoke("check", str(f), "--seed", "0")
    assert r.exit_code == 1, r.output
    assert "NOT STARTED  mha  fill in the TODOs" in r.stdout and "exception" not in r.stdout
    assert "Fill in the TODOs of bad/mha.py, then check it again." in r.stdout
    assert history.checks("mha") == []  # not a check of anything: no attempt, no mistake
    d = json.loads(invoke("check", str(f), "--json").stdout)
    assert d["version"] == 1 and d["not_started"] is True and d["passed"] is False and d["findings"] == []
    assert "not started: fill in the TODOs (your line 35 still raises NotImplementedError)" in [
        s["detail"] for s in d["stages"]]


def test_check_json(isolated):
    f = copy_unscaled(isolated / "bad")
    r = invoke("check", str(f), "--json", "--seed", "3")
    assert r.exit_code == 1
    d = json.loads(r.stdout)
    assert set(d) >= {"exercise", "file", "passed", "seed", "stages", "findings"}
    assert (d["exercise"], d["passed"], d["seed"]) == ("mha", False, 3)
    assert d["file"] == str(f.resolve())
    assert d["findings"] and d["findings"][0]["level"] == "error"


def test_check_json_lines_for_several_files(isolated):
    good, bad = copy_reference(isolated / "a"), copy_skeleton(isolated / "b", "my_mha.py")
    r = invoke("check", str(good), str(bad), "--json", "--seed", "1")
    assert r.exit_code == 1
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2
    first, second = map(json.loads, lines)
    assert (first["file"], first["passed"]) == (str(good.resolve()), True)
    assert (second["file"], second["passed"], second["exercise"]) == (str(bad.resolve()), False, "mha")


def test_check_exercise_option_overrides_the_name(isolated):
    f = copy_reference(isolated, "attempt.py")
    r = invoke("check", str(f), "--exercise", "mha", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["exercise"] == "mha"


def test_check_without_path_checks_the_started_file_and_times_a_pass(isolated):
    invoke("start", "mha")
    copy_unscaled(isolated / "attn-practice")
    r = invoke("check", "--seed", "0")
    assert r.exit_code == 1
    copy_reference(isolated / "attn-practice")
    r = invoke("check", "--seed", "0")
    assert r.exit_code == 0, r.output
    assert "Solved in" in r.stdout
    done = history.progress_of("mha")
    assert state.load().status("mha", passed=done.passed) == state.PASSED and done.best is not None
    assert [h["passed"] for h in history.checks("mha")] == [False, True]
    assert invoke("solution").exit_code == 0  # passed: no question asked


# -- real processes --------------------------------------------------------------------------------
def test_script_help_and_list(run_script):
    r = run_script("--help")
    assert r.returncode == 0 and all(name in r.stdout for name in cli.commands())
    r = run_script("list")
    assert r.returncode == 0 and "Multi-head attention" in r.stdout


def test_python_dash_m(run_module):
    r = run_module("--help")
    assert r.returncode == 0 and "Usage: attn-drill" in r.stdout
    r = run_module("list")
    assert r.returncode == 0 and "mha" in r.stdout


def test_script_start_twice_then_force_then_reset(run_script, isolated, home):
    assert run_script("start", "mha").returncode == 0
    target = isolated / "attn-practice" / "mha.py"
    target.write_text("# edited\n")
    r = run_script("start", "mha")
    assert r.returncode == 0 and target.read_text() == "# edited\n"
    r = run_script("start", "mha", "--force")
    assert r.returncode == 0
    (backup,) = (home / "backups" / "mha").iterdir()
    assert backup.read_text() == "# edited\n" and str(backup) in r.stdout
    target.write_text("# edited again\n")
    r = run_script("reset", "mha")  # no terminal: refuses
    assert r.returncode == 2 and target.read_text() == "# edited again\n"
    r = run_script("reset", "mha", "--yes")
    assert r.returncode == 0 and target.read_bytes() == MHA.skeleton.read_bytes()
    assert sorted(p.read_text() for p in (home / "backups" / "mha").iterdir()) == sorted(["# edited\n", "# edited again\n"])


def test_script_hints_and_solution(run_script):
    run_script("start", "sdpa")
    assert "hint 1/" in run_script("hint").stdout
    assert "hint 2/" in run_script("hint").stdout
    r = run_script("solution")
    assert r.returncode == 2 and "def scaled_dot_product_attention" not in r.stdout


def test_script_usage_errors(run_script):
    assert run_script("start", "nope").returncode == 2
    assert run_script("check").returncode == 2
    assert run_script("check", "missing.py").returncode == 2
    assert run_script("frobnicate").returncode == 2


def test_script_check_exit_codes(run_script, isolated):
    good, bad = copy_reference(isolated / "good"), copy_skeleton(isolated / "bad")
    r = run_script("check", str(good), "--seed", "0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert run_script("check", str(bad), "--seed", "0").returncode == 1


HEAVY = ("torch", "attn_drill.process.worker", "typer", "pydantic", "pygments")
PROBE = """
import sys
from attn_drill.cli import main
sys.argv = ["attn-drill", *{args!r}]
try:
    main()
except SystemExit as e:
    if e.code:
        raise
print("LOADED=" + ",".join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)
"""


def loaded_by(*args: str, heavy: tuple = HEAVY) -> set:
    r = subprocess.run([sys.executable, "-c", PROBE.format(args=list(args), heavy=heavy)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stderr.splitlines() if x.startswith("LOADED="))
    return set(filter(None, line[len("LOADED="):].split(",")))


@pytest.mark.parametrize("args", [["list"], ["--help"], ["-h"]])
def test_list_and_help_import_neither_torch_nor_typer(args):
    assert loaded_by(*args) == set()


@pytest.mark.parametrize("args", [["--help"], ["list", "--help"], ["solution", "--help"]])
def test_help_never_opens_the_history(args):
    invoke("start", "mha")
    history.record_check("mha", passed=True, slugs=[])  # a database there to open
    assert loaded_by(*args, heavy=("attn_drill.store.history", "sqlite3")) == set()
    assert "sqlite3" in loaded_by("list", heavy=("sqlite3",))  # the probe sees it when it is read


@pytest.mark.parametrize("args", [["start", "--help"], ["--version"]])
def test_sub_help_and_version_skip_pydantic(args):
    assert loaded_by(*args) & {"torch", "pydantic"} == set()


def test_the_fast_list_is_the_typer_list(run_module):
    invoke("start", "mha")
    assert run_module("list").stdout == invoke("list").stdout


def test_other_commands_do_not_import_torch():
    assert "torch" not in loaded_by("start", "mha")
    assert "torch" not in loaded_by("hint", "mha")


@pytest.mark.parametrize("args", [["start", "mha"], ["start", "mha", "--dir", "elsewhere", "--force"],
                                  ["hint", "sdpa"], ["hint", "mha", "--all"]])
def test_plain_start_and_hint_skip_typer(args):
    assert loaded_by(*args) & {"torch", "typer", "pydantic"} == set()


def test_the_fast_start_and_hint_are_the_typer_ones(run_module, isolated, monkeypatch):
    def session(run):
        return [run("start", "gqa", "--dir", "a").stdout, run("hint").stdout, run("hint", "--all").stdout]

    fast = session(run_module)
    assert (isolated / "a" / "gqa.py").is_file()
    other = isolated.parent / "other"  # the same session again, from scratch, through typer
    other.mkdir()
    monkeypatch.chdir(other)
    monkeypatch.setenv("ATTN_DRILL_HOME", str(isolated.parent / "home2"))
    assert fast == session(invoke)


def test_the_fast_path_leaves_odd_arguments_to_typer(run_module):
    bad = run_module("start", "mha", "--dir")  # --dir with no folder: typer says so
    assert bad.returncode == 2 and "--dir" in bad.stderr


def test_check_does_not_import_torch_in_the_cli_process(isolated):
    f = copy_reference(isolated)
    assert "torch" not in loaded_by("check", str(f), "--seed", "0")


def test_a_check_with_a_plain_seed_and_timeout_never_imports_typer(isolated):
    """`check f --seed 4893` is how a report says to replay a case: typer's parsing (pydantic, ~0.2 s) is left to
    forms that are not plainly numbers, which typer reads or refuses."""
    f = copy_reference(isolated)
    assert "typer" not in loaded_by("check", str(f), "--seed", "4893", "--timeout", "30.5", heavy=("typer",))
    assert "typer" in loaded_by("check", str(f), "--seed", "+5", heavy=("typer",))
    r = invoke("check", str(f), "--seed", "-1")
    assert r.exit_code == 2 and "--seed" in r.output
