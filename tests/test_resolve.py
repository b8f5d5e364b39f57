"""Which exercise and which file a command means (attn_drill/commands/resolve.py), and what `check` records: ids as
PATHS, any case, a batch that goes on past a file it cannot check, suggestions from what a file defines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attn_drill import catalogue, cli, paths
from attn_drill.store import history
from attn_drill.commands import resolve


def invoke(*args: str):
    return CliRunner().invoke(cli.get_app(), list(args))


def reference_as(folder: Path, exercise_id: str, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(paths.REFERENCE / catalogue.get(exercise_id).file, folder / name))


# -- ids -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("typed, meant", [("MHA", "mha"), ("Mha_Fused", "mha-fused"), ("kv_cache", "kv-cache"),
                                          ("sdpa", "sdpa")])
def test_ids_in_any_case(typed, meant):
    assert resolve.find(typed).id == meant


def test_an_unknown_id_has_no_stray_semicolon_and_no_random_suggestion():
    r = invoke("check", "nope.py", "--exercise", "foo")
    assert r.exit_code == 2
    first, second = r.stderr.splitlines()
    assert first == "error: no exercise called 'foo'." and second.startswith("the exercises: softmax, sdpa")
    assert "-e softmax" not in r.stderr and "--exercise softmax" not in r.stderr
    assert len(second) <= 80


def test_an_upper_case_exercise_option_is_the_exercise():
    r = invoke("check", "nope.py", "-e", "MHA")  # the exercise is found: the complaint is the file
    assert r.exit_code == 2 and "no such file: nope.py" in r.stderr and "no exercise called" not in r.stderr


# -- what a file defines ---------------------------------------------------------------------------
@pytest.mark.parametrize("exercise_id", list(catalogue.exercises()))
def test_a_file_not_named_after_an_exercise_gets_the_one_it_defines(isolated, exercise_id):
    f = reference_as(isolated, exercise_id, "ok.py")
    r = invoke("check", "ok.py")
    assert r.exit_code == 2
    assert f"try: attn-drill check ok.py --exercise {exercise_id}" in r.stderr
    assert resolve.defines(f).id == exercise_id


def test_a_file_that_defines_no_exercise_gets_no_guess(isolated):
    (isolated / "ok.py").write_text("def helper():\n    return 1\n")
    r = invoke("check", "ok.py")
    assert r.exit_code == 2 and "--exercise ID" in r.stderr and "--exercise softmax" not in r.stderr


def test_a_partial_masks_file_is_masks(isolated):
    (isolated / "ok.py").write_text("def causal_mask(tq, tk=None, device=None):\n    pass\n")
    assert resolve.defines(isolated / "ok.py").id == "masks"


def test_an_unparsable_file_defines_nothing(isolated):
    (isolated / "ok.py").write_text("def (:\n")
    assert resolve.defines(isolated / "ok.py") is None


# -- an id as PATH ---------------------------------------------------------------------------------
def test_check_id_means_that_exercises_file(isolated):
    assert invoke("start", "sdpa").exit_code == 0
    assert invoke("start", "mha").exit_code == 0  # sdpa is no longer the current one
    reference_as(isolated / "attn-practice", "sdpa", "sdpa.py")
    r = invoke("check", "SDPA", "--seed", "0")
    assert r.exit_code == 0, r.output
    assert "PASSED  sdpa" in r.stdout
    assert [c["passed"] for c in history.checks("sdpa")] == [True]


def test_check_id_without_a_file_says_how_to_start_it():
    r = invoke("check", "sdpa")
    assert r.exit_code == 2 and "sdpa has no file yet" in r.stderr and "attn-drill start sdpa" in r.stderr


def test_a_file_named_like_an_id_is_a_file(isolated):
    reference_as(isolated, "sdpa", "sdpa")  # no .py, but a file: it is checked as itself, not as the id
    r = invoke("check", "sdpa", "--json", "--seed", "0")
    assert json.loads(r.stdout)["file"] == str((isolated / "sdpa").resolve())


# -- batches ---------------------------------------------------------------------------------------
def test_a_missing_file_does_not_stop_a_batch(isolated):
    good = reference_as(isolated, "mha", "a.py")
    r = invoke("check", "--exercise", "mha", "a.py", "missing.py", "a.py", "--seed", "0")
    assert r.exit_code == 2, r.output
    assert r.stdout.count("PASSED  mha") == 2 and "1 not checked" in r.stdout
    assert "error: no such file: missing.py" in r.stderr
    r = invoke("check", "--exercise", "mha", str(good), "missing.py", "--json", "--seed", "0")
    first, second = map(json.loads, r.stdout.strip().splitlines())
    assert r.exit_code == 2 and first["passed"] is True
    assert second == {"exercise": None, "file": "missing.py", "passed": False, "error": "no such file: missing.py"}


def test_batch_checks_of_other_files_are_not_recorded(isolated):
    reference_as(isolated, "mha", "alice.py")
    reference_as(isolated, "mha", "bob.py")
    r = invoke("check", "--exercise", "mha", "alice.py", "bob.py", "--seed", "0")
    assert r.exit_code == 0, r.output
    assert history.checks("mha") == [] and not history.progress_of("mha").passed


def test_your_own_files_in_a_batch_are_recorded(isolated):
    invoke("start", "sdpa")
    invoke("start", "softmax")
    reference_as(isolated / "attn-practice", "sdpa", "sdpa.py")
    reference_as(isolated, "sdpa", "alice_sdpa.py")
    r = invoke("check", "sdpa", "alice_sdpa.py", "--seed", "0")
    assert r.exit_code == 0, r.output
    (c,) = history.checks("sdpa")
    assert c["file"] == str((isolated / "attn-practice" / "sdpa.py").resolve())


def test_no_record_keeps_a_check_out_of_the_history(isolated):
    invoke("start", "sdpa")
    reference_as(isolated / "attn-practice", "sdpa", "sdpa.py")
    r = invoke("check", "--no-record", "--seed", "0")
    assert r.exit_code == 0 and "PASSED" in r.stdout
    assert history.checks("sdpa") == [] and "Solved in" not in r.stdout
    assert invoke("check", "--seed", "0").exit_code == 0
    assert len(history.checks("sdpa")) == 1
