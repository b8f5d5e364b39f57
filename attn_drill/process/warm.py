"""A warm worker: torch and the checker imported once, then one forked child per check.

`watch` and `mock` check the same file again and again; paying torch's import (1-2 s) each time would
make feedback slow. So a server process (spawn.python_command("warm")) imports everything, runs the
checker once on the model answers (the first check in a process pays lazy set-up, ~0.3 s), and waits.
For each check it FORKS a child: the child runs `worker.main` exactly as a cold worker would, so the
user's code always starts from the same clean state, and whatever it breaks dies with the child.

The CLI side (`WarmPool`, no torch) plugs into runner.run_checks through its `spawn` hook, so the event
reading, the deadline and the process-group kill are the runner's own. The two sides talk over a
SOCK_SEQPACKET socket pair: the CLI sends a job with the worker's descriptors (the event pipe, the
fault file) and the log file attached (SCM_RIGHTS); the child puts them at the numbers a cold worker
would have them at; the server answers {"forked": pid}, then {"exit": code} once the child is reaped.
Each child is the leader of its own process group, so the runner's killpg ends it and anything it
started, never the server. Where this cannot work (no fork, no SEQPACKET) or the server dies, checks
fall back to a cold worker: slower, never wrong.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

from attn_drill.process import gpu, spawn

READY_LIMIT = spawn.STARTUP_LIMIT  # importing torch on a cold disk can be slow
REPLY_LIMIT = 10.0  # the server answers a job at once; longer means it is wedged


def available() -> bool:
    return hasattr(os, "fork") and hasattr(socket, "SOCK_SEQPACKET") and hasattr(socket, "send_fds")


# -- the CLI side ------------------------------------------------------------------------------------
class WarmPool:
    """One warm server for the life of a `watch` or `mock`. Use as a context manager; `spawn` is the
    runner's hook: runner.run_checks(jobs, spawn=pool.spawn)."""

    def __init__(self, warm_up: list[str] = ()):
        self.warm_up = list(warm_up)  # exercise ids whose model answers the server checks once
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.ready = False
        self.failed = not available()

    def __enter__(self) -> "WarmPool":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Start the server in the background; returns at once."""
        if self.failed or self.proc is not None:
            return
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError:
            self.failed = True
            return
        # scrubbed as a cold worker's (spawn.worker_env); a process that forks may never touch a GPU (gpu.py)
        env = gpu.hidden(spawn.worker_env())
        try:
            self.proc = subprocess.Popen(
                spawn.python_command("warm", str(theirs.fileno()), json.dumps(self.warm_up)),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,  # children: own logs
                pass_fds=(theirs.fileno(),), env=env, start_new_session=True)
        except OSError:
            self.failed = True
            ours.close()
        else:
            self.sock = ours
        finally:
            theirs.close()

    def wait_ready(self, limit: float = READY_LIMIT) -> bool:
        """Block until the server has warmed up; False if it failed (checks then go to cold workers)."""
        if self.ready or self.failed:
            return self.ready
        self.start()
        msg = self._recv(limit)
        if isinstance(msg, dict) and msg.get("ready"):
            self.ready = True
        else:
            self._give_up(for_good=True)
        return self.ready

    def spawn(self, spec: dict, fds: tuple[int, ...], log):
        """runner's hook: a forked child of the warm server, or a cold worker if the server is unusable."""
        if self.wait_ready():
            try:
                # the child's parent is the server: it dies with it (and the server with the CLI)
                job = {"spec": dict(spec, parent=self.proc.pid), "fds": list(fds)}  # fds: the numbers it expects
                socket.send_fds(self.sock, [json.dumps(job).encode()], [log.fileno(), *fds])
                msg = self._recv(REPLY_LIMIT)
                if isinstance(msg, dict) and "forked" in msg:
                    return WarmChild(self, msg["forked"])
            except OSError:
                pass
            self._give_up(for_good=False)
        return spawn.spawn_worker(spec, fds, log)

    def pids(self) -> set[int]:
        """The server's pid, while there is one."""
        return {self.proc.pid} if self.proc is not None else set()

    def close(self) -> None:
        self._stop_server(grace=spawn.EXIT_GRACE)  # closing the socket lets the server exit by itself
        self.ready = False

    def _recv(self, limit: float):
        """The server's next message; _QUIET if none came within `limit`; None on EOF or garbage."""
        if self.sock is None:
            return None
        ready, _, _ = select.select([self.sock], [], [], max(0.0, limit))
        if not ready:
            return _QUIET
        try:
            data = self.sock.recv(65536)
            return json.loads(data) if data else None
        except (OSError, ValueError):
            return None

    def _give_up(self, for_good: bool) -> None:
        """The server is dead or wedged: stop it. If it never got ready, checks use cold workers from now
        on; if it died later (a user's file can kill its parent), the next check starts a new one."""
        self._stop_server(grace=None)
        self.ready = False
        self.failed = self.failed or for_good

    def _stop_server(self, grace: float | None) -> None:
        """Close the socket (the server reads EOF and exits), then wait `grace` seconds or none, then kill."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            if grace is None:
                spawn.kill(self.proc)
            else:
                spawn.stop(self.proc, grace)
            self.proc = None


_QUIET = object()


class WarmChild:
    """The runner's view of a forked child: the few Popen methods the runner and spawn.kill use."""

    def __init__(self, pool: WarmPool, pid: int):
        self.pool, self.pid, self.returncode = pool, pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """As Popen.wait (TimeoutExpired after `timeout`); with no timeout, REPLY_LIMIT at most."""
        deadline = time.monotonic() + (REPLY_LIMIT if timeout is None else timeout)
        while self.returncode is None:
            left = deadline - time.monotonic()
            if left <= 0 and timeout is not None:
                raise subprocess.TimeoutExpired(f"warm child {self.pid}", timeout)
            if left <= 0 or self._read(left) is None:
                # the server died (a child can kill its parent) or is wedged: the child's fate is unknown
                self.pool._give_up(for_good=False)
                _killpg(self.pid)
                self.returncode = -signal.SIGKILL
        return self.returncode

    def kill(self) -> None:
        _killpg(self.pid)

    def _read(self, limit: float) -> bool | None:
        """Read one message if one comes within `limit`: True if read, False on a timeout, None when the
        server is gone."""
        msg = self.pool._recv(limit)
        if msg is _QUIET:
            return False
        if msg is None:
            return None
        if msg.get("exit_pid") == self.pid:
            self.returncode = int(msg["exit"])
        return True


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# -- the server side (imports torch) ---------------------------------------------------------------------
def serve(sock: socket.socket, warm_up: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the CLI decides when we stop (by closing the socket)
    from attn_drill.process import orphans

    orphans.die_with_parent()  # a CLI killed outright takes the server, and so every child, with it
    importlib.import_module("attn_drill.process.worker")  # imported here, once, not in each child

    _warm_up(warm_up)
    _send(sock, {"ready": True})
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 65536, 16)
        except OSError:
            return 0
        if not data:  # the CLI closed its end: done
            return 0
        job = json.loads(data)
        if len(fds) != 1 + len(job["fds"]):
            for fd in fds:
                os.close(fd)
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(sock, job, fds)  # never returns
        try:
            os.setpgid(pid, pid)  # the child does it too: whichever runs first, no race with a kill
        except OSError:
            pass
        for fd in fds:
            os.close(fd)
        _send(sock, {"forked": pid})
        _send(sock, {"exit_pid": pid, "exit": _reap(sock, pid)})


def _reap(sock: socket.socket, pid: int) -> int:
    """Wait for the child's exit code. If the CLI goes away meanwhile (killed, its terminal closed),
    kill the child's group: nobody is left to enforce its deadline."""
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(pid)  # readable when the child exits: no polling delay
        except OSError:
            pass
    watching = [sock] + ([pidfd] if pidfd is not None else [])
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            ready, _, _ = select.select(watching, [], [], 1.0 if pidfd is not None else 0.01)
            if sock in ready:
                try:
                    gone = sock.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    _killpg(pid)
                watching.remove(sock)  # EOF, or a message for later: either way, stop looking
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _warm_up(exercise_ids: list[str]) -> None:
    """Import the whole judge and check each exercise's model answer and skeleton once, so that lazy
    set-up (imports, the paths a pass and a failure take) is paid here rather than in every child. (The
    server sees no GPU at all: see gpu.py.)"""
    import pkgutil

    import attn_drill.judge
    from attn_drill import catalogue
    from attn_drill.judge.engine import check_file
    from attn_drill.process.worker import prepare_torch

    prepare_torch()  # once, here: every forked child inherits it, and the worker's own call does nothing
    for module in pkgutil.walk_packages(attn_drill.judge.__path__, "attn_drill.judge."):
        importlib.import_module(module.name)
    path = list(sys.path)
    try:
        for ex in filter(None, map(catalogue.get, exercise_ids)):
            for file in (ex.reference, ex.skeleton):
                try:
                    check_file(file, ex.id, 0)
                except Exception:  # noqa: BLE001 - a warm-up that fails only makes the first check slower
                    pass
    finally:
        sys.path[:] = path  # loading a model answer put its folder on the path: no child may import from it


def _child(sock: socket.socket, job: dict, fds: list[int]) -> None:
    code = 71  # set up failed: the runner reports an early exit as a crash
    try:
        sock.close()  # the user's code gets no line to the CLI
        os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a cold worker
        log_fd, received = fds[0], fds[1:]
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        _place(received, job["fds"])
        from attn_drill.process import worker

        code = worker.main(["worker", str(job["fds"][0]), json.dumps(job["spec"])])
    except BaseException:  # noqa: BLE001 - report it through the exit code and the log, never return
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code if isinstance(code, int) else 71)


def _place(received: list[int], wanted: list[int]) -> None:
    """Put each received descriptor at the number the worker expects (as pass_fds would): first out of
    the way, above every wanted number, so that no dup2 closes one still to be placed."""
    import fcntl

    high = max([*wanted, *received, 2]) + 1
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, high) for fd in received]
    for fd in received:
        os.close(fd)
    for fd, number in zip(moved, wanted):
        os.dup2(fd, number)  # inheritable, as pass_fds leaves them
        os.close(fd)


def _send(sock: socket.socket, msg: dict) -> None:
    try:
        sock.send(json.dumps(msg).encode())
    except OSError:
        pass  # the CLI is gone; the next recv ends the loop


def main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[1]))
    code = serve(sock, json.loads(argv[2]))
    os._exit(code)  # torch's interpreter teardown takes 0.5-2 s and nobody waits for anything in it


if __name__ == "__main__":
    sys.exit(main(sys.argv))
