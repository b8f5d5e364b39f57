"""Bad input and broken state end in one clear line and an exit code, never a traceback or a hang (issue 11).

- option values out of range or not finite, and paths the system cannot look up: a usage error (exit 2);
- a damaged progress file, lock or history: set aside with one warning line, and the command goes on;
- a read-only home, a home that cannot be created, a full disk: the output still comes (a `check` verdict
  always), with one warning line that progress could not be saved;
- a lock held by another process: a bounded wait, then one line naming the process (exit 2);
- control characters from the user's code or file names: shown escaped, never acted on by the terminal.

Tests run as root, where chmod stops no write. So the failures here are real ones that root meets too: a
bind mount remounted read-only and a full tmpfs in a private mount namespace (`unshare -m`; skipped where
that is not allowed), a home under a regular file, RLIMIT_FSIZE, and in-process the errors of the calls we
write through (tempfile.mkstemp, sqlite3.connect) for paths inside the home only.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attn_drill import cli, paths, say
from attn_drill.commands import drill as commands
from attn_drill.store import history, state
from conftest import attn_drill_script

ESC = "\x1b"


@pytest.fixture(autouse=True)
def fresh_warnings():
    say.reset_warnings()


def invoke(*args: str):
    return CliRunner().invoke(cli.get_app(), list(args))


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def warnings_in(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("warning: ")]


def start_with_reference(run, isolated: Path) -> Path:
    """`start sdpa`, then the model answer in the practice file: a check of it passes."""
    assert run("start", "sdpa").returncode == 0
    mine = isolated / "attn-practice" / "sdpa.py"
    shutil.copyfile(paths.REFERENCE / "sdpa.py", mine)
    return mine


# -- 1. option values and paths ----------------------------------------------------------------------
LONG = "a" * 300


@pytest.mark.parametrize("args, wants", [
    (["check", "--seed", "99999999999999999999"], ["--seed", "0 to 9223372036854775807"]),
    (["check", "--seed", "-1"], ["--seed", "not -1"]),
    (["check", "--seed=-5"], ["--seed"]),
    (["check", "--timeout", "inf"], ["0.1 to 3600 seconds", "not inf", "try: attn-drill check --timeout 3600"]),
    (["check", "--timeout", "nan"], ["not nan", "try: attn-drill check"]),
    (["check", "--timeout", "0"], ["not 0"]),
    (["check", "--timeout", "-3"], ["not -3"]),
    (["check", "--timeout=1e400"], ["not inf", "--timeout=3600"]),
    (["check", "--seed", "abc"], ["--seed", "try: attn-drill check --help"]),  # click's own error, our format
    (["check", "--sed", "1"], ["--sed", "try: attn-drill check --help"]),
    (["watch", "--timeout", "inf"], ["--timeout"]),
    (["watch", "--seed", "-2"], ["--seed"]),
    (["mock", "-e", "sdpa", "--minutes", "inf"], ["0.1 to 240 minutes", "--minutes 240"]),
    (["mock", "-e", "sdpa", "--minutes", "nan"], ["not nan"]),
    (["mock", "-e", "sdpa", "--minutes", "-1"], ["not -1"]),
    (["mock", "-e", "sdpa", "--minutes", "0"], ["not 0"]),
    (["mock", "-e", "sdpa", "--seed", "-1"], ["--seed"]),
    (["check", "a/" * 2100 + "sdpa.py"], ["bytes long from the root; the system allows 4095", "…"]),
    (["check", "x" * 5000 + ".py", "-e", "sdpa"], ["5003 bytes long; file systems allow 255", "…"]),
    (["check", LONG + "_sdpa.py"], ["file systems allow 255"]),
    (["start", "sdpa", "--dir", LONG], ["file systems allow 255"]),
])
def test_bad_values_and_paths_are_usage_errors(args, wants, isolated, home, capsys, monkeypatch):
    code, out, err = run_main(capsys, monkeypatch, *args)
    assert code == 2, err
    first = one_error_line(err)
    assert len(first) < 400  # a 5000-byte path is shortened, not echoed whole
    for w in wants:
        assert w in err, err
    assert out == "" and not (isolated / "attn-practice").exists()  # nothing started, nothing written
    assert not (home / "mock.json").exists()


def test_the_real_script_says_a_bad_value_in_one_line_and_exits_2(run_script, isolated):
    """The same through the installed script (the table above runs cli.main in the test's own process)."""
    r = run_script("check", "--timeout", "inf", timeout=120)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert "not inf" in one_error_line(r.stderr)


def run_main(capsys, monkeypatch, *args: str) -> tuple[int, str, str]:
    """`attn-drill ARGS` through cli.main in this process: (exit code, stdout, stderr)."""
    monkeypatch.setattr("sys.argv", ["attn-drill", *args])
    try:
        cli.main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_largest_seed_is_accepted(isolated):
    """The bound is inclusive: 2**63-1 gets past the option check (to the next usage error: no file)."""
    r = invoke("check", "--seed", str(commands.SEED_MAX))
    assert r.exit_code == 2 and "no exercise started yet" in r.stderr


def test_a_pipe_given_as_the_file_is_a_usage_error_not_a_hang(run_script, isolated):
    os.mkfifo(isolated / "sdpa.py")
    r = run_script("check", "sdpa.py", timeout=120)
    assert r.returncode == 2 and "not a regular file" in one_error_line(r.stderr)


# -- 2. and 3. damaged state and history, end to end ---------------------------------------------------
def test_damaged_progress_files_are_set_aside_and_the_command_goes_on(run_script, isolated, home):
    home.mkdir()
    (home / "state.json").write_text("[" * 200_000 + "]" * 200_000)
    (home / ".state.lock").mkdir()
    r = run_script("hint", "sdpa", timeout=120)
    assert r.returncode == 0 and "hint 1/" in r.stdout
    assert len(warnings_in(r.stderr)) == 2  # one for each file moved aside
    assert (home / "state.json.corrupt").is_file() and (home / ".state.lock.corrupt").is_dir()
    r = run_script("hint", "sdpa", timeout=120)  # repaired: quiet, and the count was kept
    assert r.returncode == 0 and "hint 2/" in r.stdout and warnings_in(r.stderr) == []


def test_wrong_types_everywhere_in_the_progress_file(run_script, isolated, home):
    home.mkdir()
    (home / "state.json").write_text(json.dumps({"current": ["sdpa"], "version": "x", "exercises": {
        "sdpa": {"file": 7, "started_at": {}, "hints_shown": "2"}, "mha": [1], "gqa": {"file": None}}}))
    r = run_script("list")
    assert r.returncode == 0 and "Begin with attn-drill start" in r.stdout
    (warning,) = warnings_in(r.stderr)
    assert "wrong type" in warning and "state.json.corrupt" in warning
    for args in (["check"], ["hint"]):  # nothing usable was started: the usual usage error, no warning now
        r = run_script(*args)
        assert r.returncode == 2 and "no exercise started yet" in one_error_line(r.stderr)
    for args in (["hint", "sdpa"], ["start", "sdpa"], ["stats"]):
        r = run_script(*args)
        assert r.returncode == 0 and r.stderr == "", r.stderr
    assert state.load().current == "sdpa" and state.load().hints_shown("sdpa") == 1


def test_an_unknown_current_exercise_counts_as_none(run_script, home):
    home.mkdir()
    (home / "state.json").write_text(json.dumps({"current": "retired-exercise"}))
    r = run_script("check", timeout=120)
    assert r.returncode == 2 and "no exercise started yet" in one_error_line(r.stderr)
    assert "current:" not in run_script("list").stdout


@pytest.mark.parametrize("damage", ["DROP TABLE checks", "DELETE FROM migrations WHERE name = '0002-check-context'",
                                    "DROP TABLE checks; CREATE TABLE checks (foo, bar)", "folder", "garbage"])
def test_a_damaged_history_is_rebuilt_and_stats_goes_on(run_script, home, damage):
    history.record_check("sdpa", passed=True, slugs=[])
    db = history.db_file()
    if damage == "folder":
        db.unlink()
        db.mkdir()
    elif damage == "garbage":
        db.write_bytes(os.urandom(8192))
    else:
        conn = sqlite3.connect(db)
        conn.executescript(damage)
        conn.close()
    r = run_script("stats", timeout=120)
    assert r.returncode == 0 and "Nothing recorded yet" in r.stdout
    (warning,) = warnings_in(r.stderr)
    assert "history.sqlite3.corrupt" in warning
    assert run_script("list").stderr == ""  # rebuilt once


# -- 4. read-only homes, homes that cannot be made, full disks -------------------------------------------
@lru_cache(maxsize=1)
def private_mounts() -> bool:
    """Whether `unshare -m` and mount work here (root in a container usually may; elsewhere skip)."""
    if not shutil.which("unshare") or not shutil.which("mount"):
        return False
    with tempfile.TemporaryDirectory() as d:
        probe = (f'mount --bind "{d}" "{d}" && mount -o remount,bind,ro "{d}" && ! touch "{d}/x" 2>/dev/null')
        r = subprocess.run(["unshare", "-m", "sh", "-c", probe], capture_output=True, timeout=60)
        return r.returncode == 0


READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
FULL = ('cp -a "$0" "$0.copy" && mount -t tmpfs -o size=256k tmpfs "$0" && cp -a "$0.copy/." "$0/" && '
        '{ dd if=/dev/zero of="$0/filler" bs=4k 2>/dev/null; true; } && exec "$@"')


def run_in(setup: str, folder: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the script in a private mount namespace, `setup` having made `folder` read-only or full."""
    if not private_mounts():
        pytest.skip("no private mount namespace here (unshare -m)")
    return subprocess.run(["unshare", "-m", "sh", "-c", setup, str(folder), attn_drill_script(), *args],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


VERDICT = r"^(PASSED|FAILED)  sdpa"  # a verdict, whichever: what it is is the checker's business, not ours here
COMMANDS = {  # what each must still print (a regular expression)
    "list": (["list"], "Scaled dot-product"),
    "hint": (["hint"], "hint 1/"),
    "stats": (["stats"], "sdpa"),
    "start": (["start", "mha"], "Wrote the skeleton"),
    "check": (["check", "--seed", "1"], VERDICT),
    "check --json": (["check", "--seed", "1", "--json"], '"passed": (true|false)'),
    "mock": (["mock", "-e", "sdpa", "--minutes", "0.1", "--answers", "1,1,1"], "scorecard"),
}
WRITES = {"hint", "start", "check", "check --json", "mock"}  # those that have progress to save


def prepared_home(run_script, isolated: Path) -> None:
    """A started exercise with a passing file and a history to read, before the home goes read-only."""
    mine = start_with_reference(run_script, isolated)
    history.record_check("sdpa", passed=True, slugs=[], attempt=state.load().started_at("sdpa"), solve_seconds=60.0,
                         file=str(mine))
    assert "1m 00s" in run_script("list").stdout


def assert_output_and_one_warning(r: subprocess.CompletedProcess, command: str, wants: str) -> None:
    assert r.returncode in (0, 1), r.stderr  # mock: 1, the skeleton never passed
    assert re.search(wants, r.stdout, re.M), r.stdout[-2000:] + r.stderr
    saving = warnings_in(r.stderr)
    if command in WRITES:
        assert len(saving) == 1 and ("could not save" in saving[0] or "could not record" in saving[0]), r.stderr
    else:
        assert len(saving) <= 1


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_read_only_home(command, run_script, isolated, home):
    prepared_home(run_script, isolated)
    before = {p.name: p.read_bytes() for p in home.iterdir() if p.is_file()}
    args, wants = COMMANDS[command]
    r = run_in(READ_ONLY, home, *args)
    assert_output_and_one_warning(r, command, wants)
    assert {p.name: p.read_bytes() for p in home.iterdir() if p.is_file()} == before  # it really was read-only
    if command == "list":
        assert "passed" in r.stdout and r.stderr == ""  # the history is read as it is, without its journal


@pytest.mark.parametrize("command", ["hint", "start", "check",
                                     pytest.param("mock", marks=pytest.mark.slow)])  # it waits out its 6 s clock
def test_a_full_disk(command, run_script, isolated, home):
    prepared_home(run_script, isolated)
    args, wants = COMMANDS[command]
    r = run_in(FULL, home, *args)
    assert_output_and_one_warning(r, command, wants)
    assert any(w in r.stderr for w in ("No space left", "full", "disk I/O error")), r.stderr  # SQLite's words vary


@pytest.mark.parametrize("command", ["list", "hint", "stats", "start", "check", "mock"])
def test_a_home_that_cannot_be_created(command, run_script, isolated, monkeypatch):
    """Its parent is a regular file: mkdir fails for root too (ENOTDIR)."""
    start_with_reference(run_script, isolated)
    blocker = isolated.parent / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("ATTN_DRILL_HOME", str(blocker / "home"))
    args, wants = COMMANDS[command]
    if command == "hint":
        args = ["hint", "sdpa"]
    if command == "check":
        args = ["check", "attn-practice/sdpa.py", "--seed", "1"]
    if command == "stats":
        wants = "Nothing recorded yet"
    r = run_script(*args, timeout=300)
    assert_output_and_one_warning(r, command, wants)
    assert blocker.read_text() == ""


def test_a_home_whose_parent_is_read_only(run_script, isolated, home, monkeypatch):
    start_with_reference(run_script, isolated)
    parent = isolated.parent / "ro-parent"
    parent.mkdir()
    monkeypatch.setenv("ATTN_DRILL_HOME", str(parent / "home"))
    r = run_in(READ_ONLY, parent, "check", "attn-practice/sdpa.py", "--seed", "1")
    assert_output_and_one_warning(r, "check", VERDICT)
    assert not (parent / "home").exists()


@pytest.fixture
def disk_full_in_home(home, monkeypatch):
    """ENOSPC from every write into the home, in this process: the temp file of an atomic write and the
    history's SQLite file (the two ways we write there); writes elsewhere (the checker's) work."""
    real_mkstemp, real_connect = tempfile.mkstemp, sqlite3.connect

    def inside(path) -> bool:
        return str(path).startswith(str(home))

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and inside(dir):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_mkstemp(*args, dir=dir, **kwargs)

    def connect(database, *args, **kwargs):
        if inside(database):
            e = sqlite3.OperationalError("database or disk is full")
            e.sqlite_errorcode = 13  # SQLITE_FULL
            raise e
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(sqlite3, "connect", connect)


def test_a_full_disk_in_process_still_shows_the_verdict(isolated, disk_full_in_home):
    (isolated / "attn-practice").mkdir()
    shutil.copyfile(paths.REFERENCE / "sdpa.py", isolated / "attn-practice" / "sdpa.py")
    r = invoke("start", "sdpa")  # the file is there already: start records it, which fails
    assert r.exit_code == 0 and "already exists" in r.stdout
    assert warnings_in(r.stderr) == [warnings_in(r.stderr)[0]] and "No space left" in r.stderr
    r = invoke("check", "attn-practice/sdpa.py", "--seed", "1")
    assert r.exit_code in (0, 1) and re.search(VERDICT, r.stdout, re.M), r.stdout
    (warning,) = warnings_in(r.stderr)
    assert "could not record the check" in warning and "disk is full" in warning
    r = invoke("hint", "sdpa")
    assert r.exit_code == 0 and "hint 1/" in r.stdout and len(warnings_in(r.stderr)) == 1


# -- 5. a lock held by another process (conftest's held_lock) ------------------------------------------
@pytest.mark.parametrize("args", [["hint", "sdpa"], ["start", "mha"], ["reset", "mha", "--yes"]])
def test_a_held_lock_fails_after_a_bounded_wait_naming_the_holder(args, held_lock, isolated, monkeypatch):
    monkeypatch.setattr(state, "LOCK_WAIT", 0.3)
    r = invoke(*args)
    assert r.exit_code == commands.EXIT_LOCKED == 2
    assert len(r.stderr.strip().splitlines()) == 1
    line = one_error_line(r.stderr)
    assert f"locked by process {held_lock}" in line and "changed nothing" in line
    assert not (isolated / "attn-practice").exists()  # start and reset wrote nothing


def test_the_real_script_waits_its_default_then_says_so(held_lock, run_script):
    r = run_script("hint", "sdpa", timeout=120)  # today's hang would be killed here, after 120 s
    assert r.returncode == 2 and f"locked by process {held_lock}" in one_error_line(r.stderr)
    assert f"waited {state.LOCK_WAIT:g} s" in r.stderr


# -- 6. control characters from the user: shown, never acted on ------------------------------------------
HOSTILE_SDPA = '''
def scaled_dot_product_attention(q, k, v, mask=None):
    print("\\x1b]0;pwned\\x07\\x1b[31mRED\\x1b[0m\\rPASSED")
    raise ValueError("\\x1b[32mPASSED\\x1b[0m \\u202eevil")
'''


def test_a_hostile_file_name_and_message_reach_the_terminal_escaped(run_script, isolated, monkeypatch):
    monkeypatch.setenv("COLUMNS", "500")  # the header's path on one line
    bad = isolated / "x\x1b[2J_sdpa.py"
    bad.write_text(HOSTILE_SDPA)
    r = run_script("check", bad.name, "--seed", "1", timeout=300)
    assert r.returncode == 1, r.stderr
    assert ESC not in r.stdout + r.stderr and "\x07" not in r.stdout and "\u202e" not in r.stdout
    assert "x\\x1b[2J_sdpa.py" in r.stdout  # the header names the file, escaped
    assert re.search(r"^FAILED  sdpa", r.stdout, re.M)
    j = run_script("check", bad.name, "--seed", "1", "--json", timeout=300)  # JSON escapes them its own way
    assert ESC not in j.stdout and "\\u001b" in j.stdout
    report = json.loads(j.stdout)
    assert report["file"].endswith("x\x1b[2J_sdpa.py")
    if any(f["slug"] == "exception" for f in report["findings"]):  # the checker's verdict on this file
        assert any("\x1b[32mPASSED" in f["evidence"] for f in report["findings"])  # raw inside the JSON strings
        assert "\\x1b[32mPASSED\\x1b[0m" in r.stdout and "\\u202eevil" in r.stdout


def test_file_names_in_usage_errors_are_escaped(run_script):
    r = run_script("check", "nope\x1b[2J.py")
    assert r.returncode == 2 and ESC not in r.stderr
    assert "nope\\x1b[2J.py" in one_error_line(r.stderr)
    r = run_script("check", "--exercise", "\x1b[2J")
    assert r.returncode == 2 and ESC not in r.stderr


def test_a_file_name_that_is_not_utf8_is_named_not_a_crash(isolated):
    name = os.fsencode("n") + b"\xff_sdpa.py"
    r = subprocess.run([attn_drill_script(), "check", name], capture_output=True, timeout=120)
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    assert b"n\\xff_sdpa.py" in r.stderr


def test_stats_and_warnings_escape_what_the_history_and_paths_hold(run_script, home, monkeypatch):
    history.record_check("\x1b[2Jevil", passed=False, slugs=["\x1b[31mslug"])
    r = run_script("stats")
    assert r.returncode == 0 and ESC not in r.stdout and "\\x1b[2Jevil" in r.stdout
    odd_home = home.parent / "h\x1b[2Jome"
    odd_home.mkdir()
    (odd_home / "state.json").write_text("{oops")
    monkeypatch.setenv("ATTN_DRILL_HOME", str(odd_home))
    r = run_script("list")
    assert r.returncode == 0 and ESC not in r.stderr and "h\\x1b[2Jome" in warnings_in(r.stderr)[0]


def test_printable_keeps_text_and_escapes_controls():
    p = say.printable
    assert p("plain [bold]text[/bold] é 中") == "plain [bold]text[/bold] é 中"
    assert p("a\x1b[2Jb\r\x07\x9b\u202e") == "a\\x1b[2Jb\\r\\x07\\x9b\\u202e"
    assert p("two\nlines\tok", multiline=True) == "two\nlines\tok" and p("two\nlines") == "two\\nlines"
    assert p("x\udcff") == "x\\xff"  # a byte that was not UTF-8
    assert len(p("a" * 5000, limit=100)) == 100 and "…" in p("a" * 5000, limit=100)


@pytest.mark.parametrize("args", [["list"], ["hint", "sdpa"], ["stats"]])
def test_a_reader_that_left_is_no_traceback(args):
    """`attn-drill list | head -0`: stdout is a pipe nobody reads (closed before we start, so no race)."""
    read, write = os.pipe()
    os.close(read)
    try:
        r = subprocess.run([attn_drill_script(), *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
