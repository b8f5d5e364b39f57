"""Broken and hostile solutions always end in a clear verdict, within the time limit, and user work survives.

tests/hostile/<exercise>/<slug>__<tag>.py must be reported with <slug> first (ok__<tag>.py must pass): empty
files, files that are not UTF-8, endless loops, sys.exit, segfaults, memory hogs, monkeypatched torch or
checker, prints by the thousand... Each folder goes through the real command line in one call,
`attn-drill check FILES --exercise ID --json`, and each JSON line is timed as it arrives.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import attn_drill_script, run_json_lines

ROOT = Path(__file__).parent.parent
HOSTILE = Path(__file__).parent / "hostile"
FILES = sorted(HOSTILE.glob("*/*.py"))
TIMEOUT = 2  # --timeout for these runs: the loops are endless anyway, and a correct file needs well under 1 s
# seconds any one file may take on the clock, worker restart included: a guard against a wedged check, not a speed
# test (on a busy machine the time a check waits for a CPU is not counted against --timeout, up to LOADED times it)
LIMIT = 120.0
SEED = 7

# What the evidence must say, beyond the slug: the reason in words
EVIDENCE = {
    "missing-name__empty_file": ["empty"],
    "missing-name__only_comments": ["only comments"],
    "syntax-error__tabs_and_spaces": ["TabError", "line 8, column", "if mask is not None"],
    "syntax-error__unterminated_string": ["line 10, column", 'float("-inf))', "^"],
    "syntax-error__nul_byte": ["NUL byte", "line 6, column 9"],
    "syntax-error__utf16_bom": ["not UTF-8", "UTF-16", "encoding='utf-16'", "encoding='utf-8'"],
    "syntax-error__cp1252_quotes": ["not UTF-8", "0x93", "line 7", "Windows-1252", "encoding='cp1252'"],
    "wrong-signature__two_params": ["scaled_dot_product_attention(q, v)"],
    "wrong-return-type__none": ["returned None"],
    "wrong-return-type__bare_tensor": ["bare tensor"],
    "wrong-return-type__triple": ["tuple of 3"],
    "wrong-return-type__lists": ["list, list"],
    "wrong-return-type__generator": ["generator"],
    "wrong-return-type__lying_tensor_subclass": ["Agreeable"],
    "wrong-return-type__forward_returns_numpy": ["ndarray"],
    "exception__sys_exit_at_import": ["sys.exit(0)", "while importing"],
    "exception__sys_exit_in_call": ["sys.exit('need a mask')"],
    "exception__sys_exit_in_forward": ["sys.exit(1)"],
    "exception__keyboard_interrupt": ["KeyboardInterrupt", "nobody pressed Ctrl-C"],
    "exception__keyboard_interrupt_in_init": ["KeyboardInterrupt", "while constructing"],
    "exception__sigint_to_itself": ["KeyboardInterrupt", "SIGINT"],
    "exception__endless_recursion": ["RecursionError", "calls itself"],
    "exception__memory_error_list": ["MemoryError", "ran out of memory", "GiB"],
    "exception__memory_cap_bytearray": ["MemoryError", "ran out of memory", "GiB", "bytearray(6 << 30)"],
    "exception__memory_cap_torch": ["can't allocate memory", "ran out of memory", "GiB"],
    "exception__input_prompt": ["EOFError", "stdin"],
    "exception__module_getattr_raises": ["RuntimeError", "no scaled_dot_product_attention here"],
    "exception__unprintable_error": ["Weird", "cannot be shown"],
    "exception__prints_without_end": ["File too large", "printed more than 64 MiB", "your line 9"],
    "timeout__busy_loop": [f"after {TIMEOUT} s", "your line"],
    "timeout__sleep_at_import": ["load stage", "time.sleep(3600)"],
    "timeout__waits_on_event": ["threading.Event().wait()"],
    "timeout__ignores_signals": [re.compile(r"your line 1[12]: (while True|pass)")],  # the loop or its body
    "timeout__forward_waits_for_input_loop": ["sys.stdin.readline()"],
    "crash__os_exit_at_import": ["exited with status 0"],
    "crash__os_exit_in_forward": ["exited with status 1"],
    "crash__abort": ["SIGABRT", "os.abort()"],
    "crash__sigkill_itself": ["SIGKILL"],
    "crash__segfault_in_helper": ["SIGSEGV", "your line 10", "ctypes.string_at(0)"],
    "crash__closes_report_channel": ["report channel"],
    "torch-modified__assert_close": ["torch.testing.assert_close", "torch.allclose"],
    "torch-modified__wraps_allclose": ["torch.allclose"],
    "torch-modified__tensor_method": ["torch.Tensor.abs"],
    "torch-modified__builtins_all": ["builtins.all"],
    "torch-modified__checker_compare": ["attn_drill.judge.compare.diff"],
    "torch-modified__report_methods": ["Report.to_wire"],
    "torch-modified__guard_disabled": ["Check.guard", "torch.allclose"],
    "torch-modified__function_mode_left_on": ["function modes"],
    "torch-modified__default_dtype": ["default dtype"],
    "torch-modified__grad_off_globally": ["grad mode"],
    "torch-modified__json_encoder": ["json.dumps"],
    "torch-modified__global_forward_hook": ["global hooks"],
    "torch-modified__linear_forward": ["nn.Linear.forward"],
    "output-reused__fresh_copies_by_shape": ["new values of the same shapes", "exactly what it returned"],
    "forbidden-builtin__disable_torch_function": ["ready-made softmax"],
    "forbidden-builtin__pop_modes_aten": ["ready-made softmax"],
    "torch-modified__reference_patched": ["reference/sdpa.py:scaled_dot_product_attention"],
    "torch-modified__reference_patched_in_call": ["your code replaced", "reference/sdpa.py:scaled_dot_product_attention"],
    "torch-modified__reference_class_patched": ["reference/mha.py:MultiHeadAttention.forward"],
    "torch-modified__aten_kernel_override": ["CPU kernel", "aten::abs", "torch.library"],
    "torch-modified__register_kernel_in_call": ["your code replaced", "aten::sub.Tensor"],
    "torch-modified__raw_dispatcher_kernel": ["torch's own arithmetic", "other numbers"],
    "torch-modified__tolerance_in_place": ["TOL[torch.float64].atol"],
    "torch-modified__spec_method_on_instance": ["SPECS['sdpa'].reference"],
    "torch-modified__swaps_code": ["__code__", "attn_drill.judge.compare.diff"],
    "checker-reached__imports_reference": ["imports attn_drill", "line 2", "reference_module"],
    "checker-reached__reference_by_path": ["reference file sdpa.py", "your line 13"],
    "checker-reached__calls_cached_reference": ["calls the checker's reference", "scaled_dot_product_attention",
                                                "your line 7"],
    "checker-reached__reference_without_function_mode": ["calls the checker's reference", "your line 10"],
    "checker-reached__stack_walk": ["sys._getframe()", "your line 6"],
    "checker-reached__inspect_stack": ["stack frames", "your line 8"],
    "checker-reached__traceback_frames": [".tb_frame", "your line 9"],
    "checker-reached__gc_finds_check": ["gc.get_objects()", "your line 8"],
    "checker-reached__judge_variants": ["attn_drill.judge.variants.attention.attention", "your line 7"],
    "checker-reached__profiler_frames": ["sys.setprofile", "your line 14"],
    "checker-reached__subclasses_reference": ["derives from MultiHeadAttention", "reference/mha.py"],
    "checker-reached__reference_masks": ["calls the checker's reference masks.py: attention_mask", "your line 18"],
    "output-reused__cache_by_shape": ["shares its memory with the out your code returned", "not computed for this call"],
    "wrong-return-type__meta_outputs": ["meta device", "nothing to compare"],
}


def run_timed(*args: str) -> tuple[int, list[tuple[dict, float]], str, float]:
    """Run the installed script; each JSON line with the seconds since the previous one (or the start)."""
    return run_json_lines(list(args), LIMIT)


@pytest.fixture(scope="module")
def batch():
    """exercise -> (exit code, {file: (report, seconds)}, stderr)."""
    out = {}
    for folder in sorted({p.parent for p in FILES}):
        files = sorted(folder.glob("*.py"))
        code, lines, stderr, _ = run_timed("check", *map(str, files), "--exercise", folder.name, "--json",
                                           "--timeout", str(TIMEOUT), "--seed", str(SEED))
        out[folder.name] = (code, {Path(d["file"]).name: (d, s) for d, s in lines}, stderr)
    return out


def expected(path: Path) -> str | None:
    head = path.stem.split("__")[0]
    return None if head == "ok" else head


def test_there_are_thirty_hostile_files_covering_every_kind():
    assert len(FILES) >= 30
    kinds = {expected(p) for p in FILES}
    assert {"syntax-error", "missing-name", "wrong-signature", "wrong-return-type", "exception", "timeout",
            "crash", "torch-modified", None} <= kinds


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_hostile_file_gets_its_verdict_in_time(path, batch):
    code, reports, stderr = batch[path.parent.name]
    assert path.name in reports, f"no report at all; stderr: {stderr[-2000:]}"
    report, seconds = reports[path.name]
    assert seconds < LIMIT, f"took {seconds:.1f} s"
    slug = expected(path)
    names = [f["slug"] for f in report["findings"]]
    if slug is None:
        assert report["passed"], f"a correct file failed: {names} {report['stages']}"
    else:
        assert not report["passed"] and names and names[0] == slug, f"expected {slug} first, got {names}"
        first = report["findings"][0]
        for words in EVIDENCE.get(path.stem, []):
            found = words.search(first["evidence"]) if isinstance(words, re.Pattern) else words in first["evidence"]
            assert found, f"{words!r} not in {first['evidence']!r}"
    assert "internal-error" not in names
    text = json.dumps(report)
    assert "attn_drill/" not in text and "Traceback" not in text, "a traceback of the checker's own"


@pytest.mark.parametrize("exercise", ["sdpa", "mha"])
def test_one_run_per_folder_exits_1_without_a_traceback(exercise, batch):
    code, reports, stderr = batch[exercise]
    assert code == 1  # some fail
    assert len(reports) == len(list((HOSTILE / exercise).glob("*.py")))  # one JSON line each, none lost
    assert "Traceback" not in stderr


def test_prints_are_kept_first_and_last_lines_without_terminal_escapes(batch):
    report, _ = batch["sdpa"][1]["ok__prints_a_lot.py"]
    out = report["output"]
    assert "debug line 0" in out and "called with" in out and "lines left out" in out
    assert "debug line 2500" not in out and len(out.splitlines()) <= 21
    assert "\x1b" not in out and "\x07" not in out
    quiet, _ = batch["sdpa"][1]["ok__utf8_bom.py"]
    assert quiet["output"] == ""  # nothing printed, nothing shown (the checker's own noise stays out)
    # a file that closed fds 1 and 2 does not silence the files after it
    after = sorted(p.name for p in (HOSTILE / "sdpa").glob("*.py"))
    following = after[after.index("ok__closes_stdout.py") + 1:]
    assert any(batch["sdpa"][1][name][0]["output"] for name in following)


def test_a_single_file_exits_with_its_own_code(run_script):
    t = time.monotonic()
    crash = run_script("check", str(HOSTILE / "sdpa" / "crash__abort.py"), "-e", "sdpa", "--json")
    ok = run_script("check", str(HOSTILE / "sdpa" / "ok__thread_left_running.py"), "-e", "sdpa", "--json")
    assert crash.returncode == 1 and json.loads(crash.stdout)["findings"][0]["slug"] == "crash"
    assert ok.returncode == 0 and json.loads(ok.stdout)["passed"]
    assert time.monotonic() - t < 2 * LIMIT
    assert "Traceback" not in crash.stderr + ok.stderr


def test_the_rendered_report_shows_the_reason_and_the_output(run_script):
    r = run_script("check", str(HOSTILE / "sdpa" / "exception__input_prompt.py"), "-e", "sdpa")
    assert r.returncode == 1
    assert "stdin" in r.stdout and "your code printed:" in r.stdout and "continue?" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


# -- usage errors: exit 2, one line saying what is wrong, one with the command that would work ---------------
@pytest.mark.parametrize("args, wants", [
    (["check", "nope.py"], ["no such file: nope.py"]),
    (["check", "."], ["is a folder"]),
    (["check", "work/"], ["is a folder", "try: attn-drill check work/sdpa.py"]),
    (["check", "work/sdpa.py", "-e", "sdp"],
     ["no exercise called 'sdp'", "try: attn-drill check work/sdpa.py -e sdpa"]),
    (["check", "work/notes.txt"], ["cannot tell which exercise", "--exercise"]),
    (["start", "mhaa"], ["did you mean mha?", "try: attn-drill start mha"]),
    (["hint", "sdpaa"], ["try: attn-drill hint sdpa"]),
    (["solution", "sdpaa", "--yes"], ["try: attn-drill solution sdpa --yes"]),
    (["reset", "mah", "--yes"], ["try: attn-drill reset mha --yes"]),
])
def test_usage_errors_exit_2_with_the_command_that_would_work(args, wants, run_script, isolated):
    (isolated / "work").mkdir()
    (isolated / "work" / "sdpa.py").write_text("# mine\n")
    (isolated / "work" / "notes.txt").write_text("notes\n")
    r = run_script(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("error: "), r.stderr
    for w in wants:
        assert w in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert (isolated / "work" / "sdpa.py").read_text() == "# mine\n"


def test_a_corrupt_progress_file_is_set_aside_with_a_warning_and_user_files_survive(run_script, home, isolated):
    r = run_script("start", "sdpa")
    mine = isolated / "attn-practice" / "sdpa.py"
    mine.write_text("# an hour of work\n")
    (home / "state.json").write_bytes(b"\x00{not json")
    r = run_script("list")
    assert r.returncode == 0 and "warning:" in r.stderr and "state.json.corrupt" in r.stderr
    assert (home / "state.json.corrupt").read_bytes() == b"\x00{not json"
    r = run_script("start", "sdpa")  # a fresh state knows nothing of the file: start still must not overwrite it
    assert r.returncode == 0 and mine.read_text() == "# an hour of work\n"


SPINS = """
import time as _time
_spun = []


def _spin_once(seconds=1.5):  # CPU time, not the clock's: on a loaded CPU it takes longer on the clock
    if not _spun:
        _spun.append(True)
        start = _time.process_time()
        while _time.process_time() - start < seconds:
            pass
"""


@pytest.mark.skipif(not Path("/proc/self/schedstat").exists() or not hasattr(os, "sched_setaffinity"),
                    reason="no schedstat or CPU affinity here")
def test_a_busy_machine_does_not_turn_a_correct_file_into_a_timeout(isolated):
    """A correct file that first computes for 1.5 s of CPU time, checked with --timeout 3 on one CPU shared
    with five busy loops: on the clock it takes several times as long, past the limit, yet the time it waited
    for the CPU is not its own. (With the clock alone, this file ends in a timeout.)"""
    text = (ROOT / "reference" / "sdpa.py").read_text()
    head, sep, body = text.partition("def scaled_dot_product_attention(")
    signature, colon, rest = body.partition(":\n")
    spun = head + SPINS + "\n\n" + sep + signature + colon + "    _spin_once()\n" + rest
    path = isolated / "sdpa.py"
    path.write_text(spun)
    cpu = {min(os.sched_getaffinity(0))}
    pin = lambda: os.sched_setaffinity(0, cpu)  # noqa: E731
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin) for _ in range(5)]
    try:
        t = time.monotonic()
        r = subprocess.run([attn_drill_script(), "check", str(path), "-e", "sdpa", "--json", "--timeout", "3",
                            "--no-record"], capture_output=True, text=True, timeout=300, preexec_fn=pin)
        took = time.monotonic() - t
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    report = json.loads(r.stdout)
    assert report["passed"], (took, report["findings"])
