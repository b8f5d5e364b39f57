"""Start, stop and kill the processes that run user code. No torch here.

A worker must import OUR attn_drill and the installed torch, never a file of the user's: Python's `-m`
and `-c` put the current directory first on the import path, so a `random.py` or `queue.py` in the
folder you run from would be imported by torch itself, and a source checkout there would replace the
installed attn_drill. So every worker runs isolated (`python -I`: no current directory, no PYTHON*
variables, no user site-packages) and loads attn_drill from the very folder this module was loaded from.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

STARTUP_LIMIT = 120.0  # importing torch on a cold disk can be slow; this only guards against a wedged start
EXIT_GRACE = 2.0  # seconds a worker that closed its channel gets to exit before it is killed

PACKAGE = Path(__file__).resolve().parent.parent  # the attn_drill running this very code

# Load attn_drill from PACKAGE under its own name before anything can import another one, then run
# `attn_drill.process.<module>.main(["<module>", *args])`.
_BOOT = """\
import sys, importlib.util
where, module, args = sys.argv[1], sys.argv[2], sys.argv[3:]
spec = importlib.util.spec_from_file_location("attn_drill", where + "/__init__.py", submodule_search_locations=[where])
package = importlib.util.module_from_spec(spec)
sys.modules["attn_drill"] = package
spec.loader.exec_module(package)
main = importlib.import_module("attn_drill.process." + module).main
sys.exit(main([module, *args]))
"""


# What a worker's environment keeps of ours: what Python, torch and a GPU read, and nothing else (no tokens,
# keys or passwords a user's shell may hold: the checked code could print them into its report).
KEEP = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM", "SYSTEMROOT", "LD_LIBRARY_PATH",
        "TMPDIR", "NO_COLOR"}
KEEP_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "HIP_", "ROCM_", "HSA_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "TORCH_",
                 "PYTORCH_", "ATTN_DRILL_")


def worker_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default ours), scrubbed down to KEEP and KEEP_PREFIXES, with the language this command speaks (a
    worker words its findings in it)."""
    from attn_drill import i18n

    env = os.environ if env is None else env
    return {k: v for k, v in env.items() if k in KEEP or k.startswith(KEEP_PREFIXES)} | {"ATTN_DRILL_LANG": i18n.lang()}


def python_command(module: str, *args: str) -> list[str]:
    """The command that runs attn_drill.process.<module>.main in an isolated interpreter."""
    return [sys.executable, "-I", "-B", "-c", _BOOT, str(PACKAGE), module, *args]


def spawn_worker(spec: dict, fds: tuple[int, ...], log) -> subprocess.Popen:
    """A cold worker for one file: `worker.main([FD])` with FD = fds[0], the event pipe, and the spec on its
    stdin (never in its command line, which any process can read). It inherits `fds` at the same numbers
    (spec may name them), prints into `log`, and leads a process group of its own. It sees no GPU unless the
    spec says it runs the GPU half of a check (spec["gpu"], see gpu.py)."""
    from attn_drill.process import gpu

    env = dict(worker_env(), CUDA_CACHE_DISABLE="1") if spec.get("gpu") else gpu.hidden(worker_env())
    proc = subprocess.Popen(
        python_command("worker", str(fds[0])),
        stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
        pass_fds=fds, start_new_session=True, cwd=spec.get("scratch"), env=env,
    )
    try:
        proc.stdin.write(json.dumps(spec).encode())  # far below a pipe's buffer: never blocks
        proc.stdin.close()
    except OSError:  # it died at once: the runner reads EOF and reports how it ended
        pass
    return proc


def kill(proc) -> None:
    """Kill the process's whole group: threads and children of the user's code go with it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.kill()
    proc.wait()


def stop(proc, grace: float = EXIT_GRACE) -> bool:
    """The channel closed: let the process finish dying (to learn how), then make sure of it. True if it
    had to be killed."""
    try:
        proc.wait(timeout=grace)
        return False
    except subprocess.TimeoutExpired:
        kill(proc)
        return True
