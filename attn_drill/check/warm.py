"""A warm worker: torch and the checker imported once, then one forked child per check.

`watch` and `mock` check the same file again and again; paying torch's import (1-2 s) each time would
make feedback slow. So a server process (`python -m attn_drill.check.warm`) imports everything, runs the
checker once on the model answers (the first check in a process pays lazy set-up, ~0.3 s), and waits.
For each check it FORKS a child: the child runs `worker.main` exactly as a cold worker would, so the
user's code always starts from the same clean state, and whatever it breaks dies with the child.

The CLI side (`WarmPool`, no torch) plugs into runner.run_checks through its `spawn` hook, so the event
reading, the deadline and the process-group kill are the runner's own. The two sides talk over a
SOCK_SEQPACKET socket pair: the CLI sends a job with the event pipe's and the log file's descriptors
attached (SCM_RIGHTS); the server answers {"forked": pid}, then {"exit": code} once the child is reaped.
Each child is the leader of its own process group, so the runner's killpg ends it and anything it
started, never the server. Where this cannot work (no fork, no SEQPACKET) or the server dies, checks
fall back to a cold worker: slower, never wrong.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

from attn_drill.check import runner

READY_LIMIT = runner.STARTUP_LIMIT  # importing torch on a cold disk can be slow
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
        self._log = None

    def __enter__(self) -> "WarmPool":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Start the server in the background; returns at once."""
        if self.failed or self.proc is not None:
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log = tempfile.TemporaryFile()  # the server's own output, shown if it fails to start
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTORCH_NVML_BASED_CUDA_CHECK="1")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "attn_drill.check.warm", str(theirs.fileno()), json.dumps(self.warm_up)],
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
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
        if msg and msg.get("ready"):
            self.ready = True
        else:
            self._give_up()
        return self.ready

    def spawn(self, spec: dict, write_fd: int, log):
        """runner's hook: a forked child of the warm server, or a cold worker if the server is unusable."""
        if self.wait_ready():
            try:
                socket.send_fds(self.sock, [json.dumps(spec).encode()], [write_fd, log.fileno()])
                msg = self._recv(REPLY_LIMIT)
                if msg and "forked" in msg:
                    return WarmChild(self, msg["forked"])
            except OSError:
                pass
            self._give_up()
        return runner.spawn_worker(spec, write_fd, log)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()  # the server reads EOF and exits
            self.sock = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                _killpg(self.proc.pid)
                self.proc.wait()
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        self.ready = False

    def server_output(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def _recv(self, limit: float) -> dict | None:
        """The server's next message; None on EOF, a timeout, or garbage."""
        if self.sock is None:
            return None
        ready, _, _ = select.select([self.sock], [], [], max(0.0, limit))
        if not ready:
            return None
        try:
            data = self.sock.recv(65536)
            return json.loads(data) if data else None
        except (OSError, ValueError):
            return None

    def _give_up(self) -> None:
        """The server is dead or wedged: stop it; later checks use cold workers."""
        self.failed, self.ready = True, False
        if self.proc is not None:
            _killpg(self.proc.pid)
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class WarmChild:
    """The runner's view of a forked child: the few Popen methods runner._run_worker and _kill use."""

    def __init__(self, pool: WarmPool, pid: int):
        self.pool, self.pid, self.returncode = pool, pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = time.monotonic() + (REPLY_LIMIT if timeout is None else timeout)
        while self.returncode is None:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                # the server died (a child can kill its parent) or is wedged: the child's fate is unknown
                self.pool._give_up()
                _killpg(self.pid)
                self.returncode = -signal.SIGKILL
        return self.returncode

    def kill(self) -> None:
        _killpg(self.pid)

    def _read(self, limit: float) -> bool:
        """Read one message if one comes within `limit`; False on EOF or timeout."""
        msg = self.pool._recv(limit)
        if msg is None:
            return False
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
    import torch

    from attn_drill.check import worker  # noqa: F401 - imported here, not in each child

    _warm_up(torch, warm_up)
    _send(sock, {"ready": True})
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 65536, 2)
        except OSError:
            return 0
        if not data:  # the CLI closed its end: done
            return 0
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        write_fd, log_fd = fds
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(sock, json.loads(data), write_fd, log_fd)  # never returns
        try:
            os.setpgid(pid, pid)  # the child does it too: whichever runs first, no race with a kill
        except OSError:
            pass
        os.close(write_fd)
        os.close(log_fd)
        _send(sock, {"forked": pid})
        _, status = os.waitpid(pid, 0)
        _send(sock, {"exit_pid": pid, "exit": os.waitstatus_to_exitcode(status)})


def _warm_up(torch, exercise_ids: list[str]) -> None:
    """Check the model answers once, so lazy set-up is paid here rather than in every child. CUDA is
    hidden meanwhile: a process that has touched CUDA cannot fork a child that uses it."""
    from attn_drill import catalogue
    from attn_drill.check.engine import check_file
    from attn_drill.check.trace import keep_dynamo_out

    keep_dynamo_out()
    torch.set_num_threads(1)  # as the worker does; also means no thread pool to break across fork
    real = torch.cuda.is_available
    torch.cuda.is_available = lambda: False
    try:
        for exercise_id in exercise_ids:
            ex = catalogue.get(exercise_id)
            try:
                if ex is not None and ex.reference.is_file():
                    check_file(ex.reference, ex.id, 0)
            except Exception:  # noqa: BLE001 - a warm-up that fails only makes the first check slower
                pass
    finally:
        torch.cuda.is_available = real


def _child(sock: socket.socket, spec: dict, write_fd: int, log_fd: int) -> None:
    code = 70
    try:
        sock.close()  # the user's code gets no line to the CLI
        os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a cold worker
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        from attn_drill.check import worker

        code = worker.main(["worker", str(write_fd), json.dumps(spec)])
    except BaseException:  # noqa: BLE001 - report it through the exit code and the log, never return
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code if isinstance(code, int) else 70)


def _send(sock: socket.socket, msg: dict) -> None:
    try:
        sock.send(json.dumps(msg).encode())
    except OSError:
        pass  # the CLI is gone; the next recv ends the loop


def main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[1]))
    return serve(sock, json.loads(argv[2]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
