"""Limits for the process that runs a user's code, and what that code printed. No torch here.

The worker calls `confine()` once, after importing torch and before any user code runs (a worker forked
from a warm, pre-imported process must call it too), then `begin_job()` / `job_output()` around each file:

- stdin reads /dev/null: `input()` raises EOFError at once instead of waiting for a keyboard;
- a memory cap (RLIMIT_DATA, MEMORY_CAP_GIB on top of what torch itself holds): a huge allocation fails
  with MemoryError, or torch's "can't allocate memory", instead of swapping or waking the OOM killer;
- a file-size cap (RLIMIT_FSIZE, with SIGXFSZ ignored): an endless print stops with OSError at OUTPUT_CAP
  instead of filling the disk;
- stdout and stderr (fds 1 and 2) share one regular file, also held on a spare descriptor, so that a file
  which closes or redirects fd 1 cannot hide the next file's output; each job truncates it first;
- faulthandler writes a segfault's Python stack to the runner's fault file, where it finds the user's line;
- with a scratch folder (a fresh empty one per check, made and removed by the runner): it becomes the
  working directory and the temp folder, and landlock.py confines the process to it: files may be
  written only there and read only there and where `readable` says (Python, its packages, the checked
  file's helper modules), no network, no signals to processes outside (Linux); and the worker dies with its
  parent (orphans.py). `confine` returns what of that is NOT in force, in words ("" when all is).

Where a limit is not available (another OS, a lower hard limit) the check goes on without it.
"""

from __future__ import annotations

import os
import sys

from attn_drill.limits import HEAD_LINES, MEMORY_CAP_GIB, OUTPUT_CAP, TAIL_LINES, clean, excerpt
_READ = 64 << 10  # bytes read from each end of a long output

_spare = None  # a descriptor of the output file that user code does not know about
_faults = None  # the fault file, kept open for faulthandler
not_enforced = ""  # what confine() could not put in force, in words; "" when everything is


def confine(fault_fd: int | None = None, *, scratch: str | None = None, parent: int | None = None,
            files: list[str] | None = None, gpu: bool = False) -> str:
    """Set every limit; with `scratch`, also confine the process to that folder (the last step: torch is
    imported and every descriptor the worker writes to is open by then). `parent`: the pid that started
    this process, if known (the worker exits at once if it is already gone). With `files` (the files this
    process will check), reads are confined too, to what `readable` lists. Returns `not_enforced`."""
    global _spare, _faults, not_enforced
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    _cap_memory()
    _set_limit("RLIMIT_FSIZE", OUTPUT_CAP)
    import signal

    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap raises OSError, nothing dies
    if not _is_file(1):  # a worker started another way: give it a file to print into
        import tempfile

        tmp = tempfile.TemporaryFile()
        os.dup2(tmp.fileno(), 1)
        tmp.close()
    os.dup2(1, 2)
    import fcntl

    _spare = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 200)
    if fault_fd is not None:
        import faulthandler

        _faults = os.fdopen(fault_fd, "w")
        faulthandler.enable(file=_faults, all_threads=False)
        # at the deadline the runner sends SIGUSR1, then kills: the stack says where the time went. (A
        # dump_traceback_later watchdog reads the frames of a running thread and could segfault the worker
        # now and then, turning a timeout into a crash.)
        faulthandler.register(signal.SIGUSR1, file=_faults, all_threads=True)
    not_enforced = "no scratch folder was given: files, network and other processes are not protected"
    if scratch is not None:
        not_enforced = _enclose(scratch, parent, None if files is None else readable(files, gpu))
    return not_enforced


def readable(files: list[str], gpu: bool = False) -> tuple[list[str], list[str]]:
    """What checked code may read besides its scratch folder: Python, its standard library and installed
    packages (torch, attn-drill, numpy...), the system's shared libraries and time zones, this process's own
    /proc folder, and the Python files and packages beside each checked file (its helper modules, a folder with
    an `__init__.py`; not the folder's other files, nor its other subfolders: a file checked in your home folder
    does not open ~/.ssh). With `gpu`, what the
    GPU's driver may read too: the system's folders (/usr, /opt, /etc, /sys, /dev, /proc/driver). Never: your
    home, attn-drill's, other processes' /proc files (nor /etc without a GPU).
    (paths to read, beneath each; folders that may only be listed)."""
    import site
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths |= {sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= set(site.getsitepackages()) | {p for p in sys.path if p and os.path.isabs(p)}  # -I: no cwd in it
    for name in ("attn_drill", "torch"):  # wherever they are installed (an editable install: its checkout)
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            paths.add(os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))))
    paths |= {"/lib", "/lib32", "/lib64", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/local/lib",
              "/etc/ld.so.cache", "/usr/share/zoneinfo", "/etc/localtime", "/proc/self", "/proc/cpuinfo",
              "/sys/devices/system/cpu", "/sys/devices/system/node"}
    if gpu:  # the driver and its libraries read widely (and this was not yet run on a GPU): the system's folders
        paths |= {"/usr", "/opt", "/etc", "/sys", "/dev", "/proc/driver"}
    listed = set()
    for file in files:
        near = {os.path.abspath(file), os.path.realpath(file)}  # a file, or a folder of modules (explain's)
        for folder in {p if os.path.isdir(p) else os.path.dirname(p) for p in near}:
            listed.add(folder)  # its listing (an import looks there first), and its modules
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            paths |= {os.path.join(folder, n) for n in names if n.endswith(".py")}
            # a package beside it (`mylib/__init__.py`: `from mylib.ops import probs`), never a hidden folder
            paths |= {os.path.join(folder, n) for n in names if not n.startswith(".")
                      and os.path.isfile(os.path.join(folder, n, "__init__.py"))}
    return sorted(p for p in paths if p), sorted(listed)


def _enclose(scratch: str, parent: int | None, reads: tuple[list[str], list[str]] | None) -> str:
    """The scratch folder as working and temp folder, then the walls (Landlock, seccomp, death with parent)."""
    import tempfile

    from attn_drill.process import landlock, orphans

    try:
        os.chdir(scratch)
    except OSError:
        pass  # gone already: landlock then leaves nothing writable, which is stricter, not looser
    for name in ("TMPDIR", "TEMP", "TMP"):
        os.environ[name] = scratch
    tempfile.tempdir = scratch
    orphans.die_with_parent(parent)
    return landlock.restrict(scratch, *(reads or (None, ())))


def memory_cap_bytes() -> int:
    return MEMORY_CAP_GIB << 30


def _cap_memory() -> None:
    used = 0
    try:
        with open("/proc/self/status") as f:
            used = next(int(line.split()[1]) << 10 for line in f if line.startswith("VmData:"))
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    _set_limit("RLIMIT_DATA", used + memory_cap_bytes())


def _set_limit(name: str, value: int) -> None:
    try:
        import resource

        which = getattr(resource, name)
        _, hard = resource.getrlimit(which)
        resource.setrlimit(which, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))
    except (ImportError, AttributeError, ValueError, OSError):
        pass


def _is_file(fd: int) -> bool:
    import stat

    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def begin_job() -> None:
    """Fresh fds 0-2 and streams for the next file, an empty output file (whatever the last file did), and an
    empty fault file (where a crash's or a timeout's Python stack goes)."""
    global _spare
    _flush()
    if _faults is not None:
        try:
            os.ftruncate(_faults.fileno(), 0)
            os.lseek(_faults.fileno(), 0, os.SEEK_SET)
        except (OSError, ValueError):
            pass
    if _spare is None:
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(_spare, 1)
        os.dup2(_spare, 2)
        os.ftruncate(_spare, 0)
        os.lseek(_spare, 0, os.SEEK_SET)
    except OSError:  # the last file closed our spare descriptor too: its output is lost, not the check
        _spare = None
        return
    # line-buffered, so that the lines before a timeout or a crash are in the file when the runner reads it
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)


def job_output() -> str:
    """What the current file printed, its first and last lines."""
    _flush()
    return read_excerpt(_spare) if _spare is not None else ""


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - a stream the user's code closed or replaced
            pass


def read_excerpt(fd: int) -> str:
    """The first and last lines of the file behind fd, read without moving its offset."""
    try:
        size = os.fstat(fd).st_size
        if size <= 2 * _READ:
            return excerpt(os.pread(fd, size, 0).decode("utf-8", "replace"))
        head = os.pread(fd, _READ, 0).decode("utf-8", "replace").splitlines()[:HEAD_LINES]
        tail = os.pread(fd, _READ, size - _READ).decode("utf-8", "replace").splitlines()[1:][-TAIL_LINES:]
    except OSError:
        return ""
    gap = f"... ({(size - 2 * _READ) >> 10} KiB or more left out) ..."
    return "\n".join([*map(clean, head), gap, *map(clean, tail)])
