"""Processes that outlive the check that started them, on both sides of the boundary. No torch here.

Killing the worker's process group ends its threads and every child that stayed in the group. A child
that calls setsid() (the classic double-fork daemon) leaves the group, and when its parent exits it is
re-parented, normally to init, where nobody would ever kill it. Two things close that gap:

- the CLI becomes a *child subreaper* (`become_subreaper`, Linux): such orphans are re-parented to the
  CLI instead of init, so after each check `kill_adopted(known)` finds them among the CLI's direct
  children and kills them, with their process groups, and reaps them;
- the worker dies with its parent (`die_with_parent`): if the CLI (or the warm server that forked the
  worker) is killed, the kernel sends the worker SIGKILL (PR_SET_PDEATHSIG), so a check never runs on
  with nobody left to enforce its deadline. Elsewhere a watchdog thread polls the parent.

Where these are not available (not Linux, an old kernel) they do nothing and say so by their result.
"""

from __future__ import annotations

import os
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
REAP_LIMIT = 5.0  # seconds kill_adopted waits for one killed process to become reapable


def _prctl(option: int, arg: int) -> bool:
    """prctl(option, arg) through libc; False where there is no such call or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
        prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        prctl.restype = ctypes.c_int
        return prctl(option, arg, 0, 0, 0) == 0
    except (OSError, AttributeError, TypeError):
        return False


# -- the worker side --------------------------------------------------------------------------------------
def die_with_parent(parent: int | None = None) -> bool:
    """Make the calling process end when its parent does. `parent` is the pid it was started by (default:
    its parent now). If the parent is already gone (our parent pid is no longer `parent`), exit at once.

    Linux: prctl(PR_SET_PDEATHSIG, SIGKILL); the kernel kills us when the parent *thread* that forked us
    exits (so the parent must start workers from a thread that lives as long as they do). The setting is
    not inherited by our own children: those are the subreaper's business. Elsewhere (POSIX): a daemon
    thread that polls the parent pid and exits the process when it changes. True if either is in place."""
    if parent is None:
        parent = os.getppid()
    armed = _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if not armed and os.name == "posix":
        armed = _watch_parent(parent)
    if os.getppid() != parent:  # it died before the signal was armed: nobody would ever send it
        os._exit(1)
    return armed


def _watch_parent(parent: int, every: float = 0.5) -> bool:
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    try:
        threading.Thread(target=watch, name="attn-drill-parent-watch", daemon=True).start()
    except RuntimeError:
        return False
    return True


# -- the CLI side -----------------------------------------------------------------------------------------
def keep_private() -> bool:
    """Make this process's /proc files (its environment, its memory) unreadable to the processes of its user,
    the checked code among them (Linux; a root process can still read them). True if so."""
    return _prctl(4, 0)  # PR_SET_DUMPABLE: 0; exec resets it, so no worker inherits it


def become_subreaper() -> bool:
    """Make orphaned descendants of this process re-parent to it instead of init (Linux 3.4+). True if so."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def children() -> set[int]:
    """The pids of this process's direct children now (zombies included), from /proc; empty elsewhere."""
    me = os.getpid()
    found: set[int] = set()
    listed = False
    try:  # /proc/self/task/*/children: each thread's children (needs CONFIG_PROC_CHILDREN)
        for task in os.listdir(f"/proc/{me}/task"):
            try:
                with open(f"/proc/{me}/task/{task}/children") as f:
                    found.update(int(pid) for pid in f.read().split())
                listed = True
            except (OSError, ValueError):
                pass
    except OSError:
        pass
    if listed:
        return found
    try:  # every process's parent, from /proc/PID/stat
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return found
    for pid in pids:
        if _parent_of(pid) == me:
            found.add(pid)
    return found


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'
        return int(stat[stat.rindex(b")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def kill_adopted(known: set[int]) -> list[int]:
    """SIGKILL every direct child not in `known` (orphans re-parented to us, as a subreaper), and the
    process group each one leads or belongs to, then reap them. Repeats while killing them hands us new
    orphans (their own children). Returns the pids killed, in order.

    Call it when every child this process started on purpose is in `known` (or already reaped): any other
    child is taken for an orphan. Never kills our own process group or that of a known child."""
    if not sys.platform.startswith("linux"):
        return []
    spared = {os.getpgid(0)}
    for pid in known:
        try:
            spared.add(os.getpgid(pid))
        except OSError:
            pass
    killed: list[int] = []
    for _ in range(100):  # each round kills what the last one orphaned; a fork bomb cannot keep us here
        strays = sorted(children() - set(known) - set(killed))
        if not strays:
            break
        for pid in strays:
            _kill(pid, spared)
            killed.append(pid)
        for pid in strays:
            _reap(pid)
    return killed


def _kill(pid: int, spared: set[int]) -> None:
    try:
        group = os.getpgid(pid)
    except OSError:
        group = None
    if group is not None and group not in spared and group > 1:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _reap(pid: int) -> None:
    """Wait for a killed child, within REAP_LIMIT (a process stuck in the kernel may not die at once)."""
    end = time.monotonic() + REAP_LIMIT
    delay = 0.001
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return  # reaped elsewhere, or never ours
        except OSError:
            return
        if done or time.monotonic() > end:
            return
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
