"""Your past attempts (attn_drill/store/attempts.py), `attempts`, `repro` and `solution`'s plain and diff forms.

The store is tested directly with hand-made reports; the commands through CliRunner with the real checker,
and the script `repro` writes is run with plain python in a subprocess."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attn_drill.store import attempts
from attn_drill import cli
from attn_drill.report import FAIL, PASS, Report, Stage
from attn_drill import findings

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus"


def invoke(*args: str):
    return CliRunner().invoke(cli.get_app(), list(args), env={"COLUMNS": "80"})


def report(passed: bool, seed: int = 7, case: int | None = 2) -> Report:
    rep = Report("sdpa", "x", seed, stages=[Stage("load", PASS), Stage("values", PASS if passed else FAIL, "LABEL: d")])
    if not passed:
        rep.findings = [findings.make("missing-scale", "e", score=1.0), findings.make("exception", "e2")]
        rep.case = case
    return rep


# -- the store ---------------------------------------------------------------------------------------
def test_versions_are_kept_once_per_content_with_the_latest_verdict(isolated, home):
    f = isolated / "sdpa.py"
    f.write_text("v1\n")
    first = attempts.keep("sdpa", f, report(False))
    again = attempts.keep("sdpa", f, report(False, seed=9))
    f.write_text("v2\n")
    second = attempts.keep("sdpa", f, report(True))
    index = attempts.load("sdpa")
    assert [(a.n, a.passed, a.slug, a.checks) for a in index.attempts] == [(1, False, "missing-scale", 2),
                                                                          (2, True, "", 1)]
    assert (first.n, again.n, second.n) == (1, 1, 2)
    assert attempts.content("sdpa", index.attempts[0]) == b"v1\n"
    failure = index.last_failure  # the latest failing check, to replay: its seed and case
    assert (failure.seed, failure.case, failure.stage, failure.slug) == (9, 2, "values", "missing-scale")
    assert oct((home / "attempts" / "sdpa" / "index.json").stat().st_mode)[-3:] == "644"


def test_the_store_is_bounded_and_numbers_stay(isolated, monkeypatch):
    monkeypatch.setattr(attempts, "MAX_KEPT", 3)
    f = isolated / "sdpa.py"
    for i in range(5):
        f.write_text(f"v{i}\n")
        attempts.keep("sdpa", f, report(True))
    index = attempts.load("sdpa")
    assert [a.n for a in index.attempts] == [3, 4, 5]
    assert sorted(p.name for p in attempts.folder("sdpa").glob("*.py")) == sorted(
        f"{a.hash}.py" for a in index.attempts)  # the dropped copies are deleted
    f.write_bytes(b"x" * (attempts.MAX_BYTES + 1))
    assert attempts.keep("sdpa", f, report(True)) is None  # too big to keep


@pytest.mark.parametrize("damage", ["{not json", '{"attempts": [{"n": 1, "hash": "../../etc/passwd", "at": 1, '
                                    '"passed": true}], "next_n": 2}', '{"attempts": "x", "next_n": 1}'])
def test_a_damaged_index_is_set_aside_and_a_new_one_started(damage, isolated, capsys):
    folder = attempts.folder("sdpa")
    folder.mkdir(parents=True)
    (folder / "index.json").write_text(damage)
    f = isolated / "sdpa.py"
    f.write_text("v\n")
    assert attempts.keep("sdpa", f, report(True)).n == 1
    assert (folder / "index.json.corrupt").read_text() == damage
    assert "moved it to" in capsys.readouterr().err


def test_a_home_that_cannot_be_written_warns_and_keeps_nothing(isolated, home, capsys):
    home.parent.mkdir(parents=True, exist_ok=True)
    home.write_text("a file where the home folder should be")  # every write under it fails, as root too
    f = isolated / "sdpa.py"
    f.write_text("v\n")
    assert attempts.keep("sdpa", f, report(True)) is None
    assert "could not save this attempt" in capsys.readouterr().err


# -- the commands, with the real checker -------------------------------------------------------------
@pytest.fixture
def failed_sdpa(isolated):
    """sdpa started, a missing-scale version checked (it fails at values), then checked again unchanged."""
    assert invoke("start", "sdpa").exit_code == 0
    practice = isolated / "attn-practice" / "sdpa.py"
    shutil.copy(CORPUS / "sdpa" / "missing-scale__no_div.py", practice)
    r = invoke("check", "--seed", "11")
    assert r.exit_code == 1, r.output
    return practice, r.output


def test_check_keeps_attempts_and_names_repro(failed_sdpa):
    practice, output = failed_sdpa
    assert "attn-drill repro sdpa" in output  # the report says how to replay the case
    ok = (REPO / "reference" / "sdpa.py").read_text()
    practice.write_text(ok)
    assert invoke("check").exit_code == 0
    r = invoke("attempts")
    lines = r.output.splitlines()
    assert re.search(r"^ +1  \d{4}-\d\d-\d\d \d\d:\d\d  failed +missing-scale", lines[2]), r.output
    assert re.search(r"^ +2  .*passed", lines[3]), r.output
    assert all(len(line) <= 80 for line in lines)
    shown = invoke("attempts", "sdpa", "1")
    assert shown.exit_code == 0 and shown.output == (CORPUS / "sdpa" / "missing-scale__no_div.py").read_text()
    diff = invoke("attempts", "sdpa", "1", "--diff").output
    assert diff.startswith("--- attempt 1 (") and "+++ attn-practice/sdpa.py (now)" in diff
    assert any(line.startswith("+") and not line.startswith("+++") for line in diff.splitlines())
    missing = invoke("attempts", "sdpa", "9")
    assert missing.exit_code == 2 and "no attempt 9 of sdpa: the ones kept are 1 to 2" in missing.output


def test_a_file_that_is_not_the_practice_file_is_not_kept(isolated):
    other = isolated / "someone_sdpa.py"
    shutil.copy(CORPUS / "sdpa" / "missing-scale__no_div.py", other)
    r = invoke("check", str(other))
    assert r.exit_code == 1 and "attn-drill repro" not in r.output
    assert attempts.load("sdpa").attempts == []


def test_repro_writes_a_script_that_shows_the_checks_mismatch(failed_sdpa):
    practice, output = failed_sdpa
    r = invoke("repro")
    assert r.exit_code == 0, r.output
    script = practice.parent / "repro" / "sdpa_11.py"
    assert f"Wrote {script.relative_to(Path.cwd())}" in r.output and "Run it: " in r.output
    env = dict(os.environ, PYTHONPATH=str(REPO))  # this checkout's attn_drill, as the installed one would be
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1, run.stderr
    # the check's first mismatch, "yours A, expected B" (4 digits), is the script's (6 digits): the same case
    check = re.search(r"(\w+) differs first at \(([^)]*)\): yours (\S+), expected (\S+?);", " ".join(output.split()))
    script_says = re.search(rf"{check[1]}: first differs at \({re.escape(check[2])}\):\n  yours (\S+), expected (\S+)\n",
                            run.stdout)
    assert max(map(len, run.stdout.splitlines())) <= 80
    assert script_says, (check.groups(), run.stdout)
    assert float(script_says[1]) == pytest.approx(float(check[3]), rel=1e-3)
    assert float(script_says[2]) == pytest.approx(float(check[4]), rel=1e-3)
    assert "def scaled_dot_product_attention" not in run.stdout + script.read_text()  # no model answer code
    practice.write_text((REPO / "reference" / "sdpa.py").read_text())  # fixed: the same script says so
    fixed = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert fixed.returncode == 0 and "the same" in fixed.stdout


def test_repro_with_nothing_failed_is_a_usage_error(isolated):
    assert invoke("start", "sdpa").exit_code == 0
    r = invoke("repro")
    assert r.exit_code == 2 and "no failing check of sdpa to replay yet" in r.output


def test_solution_piped_is_plain_python_and_diffs_against_your_file(isolated):
    assert invoke("start", "mha").exit_code == 0
    r = invoke("solution", "mha", "--yes")
    assert r.exit_code == 0
    compile(r.stdout, "mha_answer.py", "exec")  # `solution mha --yes > f.py` is a valid file
    assert r.stdout == (REPO / "reference" / "mha.py").read_text()
    d = invoke("solution", "mha", "--yes", "--diff")
    assert d.exit_code == 0
    assert d.output.startswith("--- attn-practice/mha.py (yours)\n+++ model answer for mha\n")
    assert "+class MultiHeadAttention" in d.output or "+        " in d.output
    refused = invoke("solution", "mha", "--diff")  # not passed, no terminal: it still refuses
    assert refused.exit_code == 2


def test_attempts_and_repro_never_import_torch(failed_sdpa):
    from test_cli import loaded_by

    assert loaded_by("attempts", heavy=("torch",)) == set()
    assert loaded_by("repro", heavy=("torch",)) == set()


def test_the_script_compiles_whatever_the_detail_holds(isolated):
    from attn_drill.practice import repro

    nasty = 'x """ y \\ \\N{oops} \x1b[2J "\'\' raised ValueError: \\' + "z" * 300
    failure = attempts.Failure("h", 5, "exception", "values", nasty, 0, 1.0, str(isolated / "attn-practice" / "mha.py"))
    path, command = repro.write("mha", failure, str)
    assert path == isolated / "attn-practice" / "repro" / "mha_5.py" and command.endswith(str(path))
    text = path.read_text()
    compile(text, str(path), "exec")
    assert "\x1b" not in text  # shown escaped, never raw


@pytest.mark.parametrize("folder", ['we"""ird $(touch pwned) `touch pwned2` x\\', "new\nline\x1b[31m"])
def test_repro_quotes_every_name_it_writes_into_code_or_prints(folder, isolated, monkeypatch):
    """A folder name that closes the script's docstring runs nothing; the printed command is shell-quoted (a
    `$(...)` in a path runs nothing when pasted); a newline or an escape reaches the terminal escaped."""
    work = isolated / folder
    work.mkdir()
    monkeypatch.chdir(work)
    assert invoke("start", "sdpa").exit_code == 0
    shutil.copy(CORPUS / "sdpa" / "missing-scale__no_div.py", work / "attn-practice" / "sdpa.py")
    assert invoke("check", "--seed", "11").exit_code == 1
    monkeypatch.chdir(isolated)  # from the folder above, the paths printed and written hold the odd name
    r = invoke("repro")
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split("\nRun it:", 1)[1].split("\n")).strip()  # the end, wrapped at spaces
    assert "\x1b" not in r.output and "\nline" not in r.output, r.output
    script = work / "attn-practice" / "repro" / "sdpa_11.py"
    compile(script.read_text(), str(script), "exec")  # still one docstring, then our code
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if "\n" not in folder:  # the command as printed is the command to paste: it runs the script
        run = subprocess.run(said, shell=True, capture_output=True, text=True, env=env,
                             timeout=300)
        assert run.returncode == 1 and "differs" in run.stdout, (said, run.stdout, run.stderr)
    else:  # a name no shell line can hold as printed: the script itself still runs
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 1 and "differs" in run.stdout, run.stderr
    assert not list(isolated.rglob("pwned*")) and not list(Path.cwd().glob("pwned*"))


def test_a_deeply_nested_index_is_set_aside(isolated, capsys):
    folder = attempts.folder("sdpa")
    folder.mkdir(parents=True)
    (folder / "index.json").write_text("[" * 100_000 + "]" * 100_000)
    assert attempts.load("sdpa").attempts == []
    assert (folder / "index.json.corrupt").exists() and "moved it to" in capsys.readouterr().err


def test_diff_against_a_fifo_refuses_at_once(failed_sdpa):
    practice, _ = failed_sdpa
    practice.unlink()
    os.mkfifo(practice)
    r = subprocess.run([sys.executable, "-m", "attn_drill", "attempts", "sdpa", "1", "--diff"], capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 2 and "is not a regular file" in r.stdout + r.stderr, (r.stdout, r.stderr)


def test_concurrent_checks_of_changing_content_keep_each_version_with_its_own_verdict(isolated):
    """Four checks started while the practice file changes under them: whatever each checker read, what is kept
    is a version with the verdict of that very version (right ones passed, wrong ones failed), once each."""
    assert invoke("start", "sdpa").exit_code == 0
    practice = isolated / "attn-practice" / "sdpa.py"
    right = (REPO / "reference" / "sdpa.py").read_text()
    wrong = (CORPUS / "sdpa" / "missing-scale__no_div.py").read_text()
    versions = [right, wrong, right + "\n# again\n", wrong + "\n# again\n"]
    procs = []
    for text in versions:
        practice.write_text(text)
        procs.append(subprocess.Popen([sys.executable, "-m", "attn_drill", "check", "--seed", "2"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      env=dict(os.environ, PYTHONPATH=str(REPO))))
        time.sleep(0.3)
    for p in procs:
        p.wait(timeout=300)
    kept = attempts.load("sdpa").attempts
    assert kept, "at least the last version is kept"
    for a in kept:
        text = attempts.content("sdpa", a).decode()
        assert a.passed == ("/ math.sqrt(d)" in text), (a, text[:80])
    assert len({a.hash for a in kept}) == len(kept)
