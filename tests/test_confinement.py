"""The walls around a user's code: Landlock + seccomp (landlock.py), orphans and dying with the parent
(orphans.py), sandbox.confine(scratch=...), and the hostile files that try to get through them.

Everything that restricts a process runs in a subprocess (a restriction can never be lifted). A test is
skipped only where this kernel lacks the feature, and says which.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from attn_drill.process import landlock, orphans

LINUX = sys.platform.startswith("linux")
ABI = landlock.abi()
SECCOMP = LINUX and landlock._AUDIT_ARCH.get(os.uname().machine.lower()) is not None and sys.byteorder == "little"
WAIT = 60.0  # the bound on any wait for another process: generous, never a margin

needs_landlock = pytest.mark.skipif(ABI < 1, reason="this kernel has no Landlock (or it is not enabled)")
needs_seccomp = pytest.mark.skipif(not SECCOMP, reason="no seccomp filter for this platform")
needs_linux = pytest.mark.skipif(not LINUX, reason="Linux only")


def run_py(code: str, *args: str, timeout: float = 300) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON object last, which is returned."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


# Runs in the child: `attempt(name, fn)` records "ok" or the exception's class and errno
ATTEMPT = """
import errno, json, os, socket, sys
results = {}
def attempt(name, fn):
    try:
        fn()
        results[name] = "ok"
    except OSError as e:
        results[name] = f"{type(e).__name__}:{errno.errorcode.get(e.errno, e.errno)}"
"""


# -- landlock.restrict: files ---------------------------------------------------------------------------------
@needs_landlock
def test_after_restrict_only_the_folder_is_writable(tmp_path):
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    (outside / "sub").mkdir()
    res = run_py(ATTEMPT + """
from attn_drill.process import landlock
scratch, outside = sys.argv[1], sys.argv[2]
before = open(os.path.join(outside, "keep.txt"), "r+")  # opened before: keeps working
phrase = landlock.restrict(scratch)
attempt("create outside", lambda: open(os.path.join(outside, "new.txt"), "w"))
attempt("overwrite outside", lambda: open(os.path.join(outside, "keep.txt"), "w"))
attempt("append outside", lambda: open(os.path.join(outside, "keep.txt"), "a"))
attempt("truncate outside", lambda: os.truncate(os.path.join(outside, "keep.txt"), 0))
attempt("delete outside", lambda: os.remove(os.path.join(outside, "keep.txt")))
attempt("rename outside", lambda: os.rename(os.path.join(outside, "keep.txt"), os.path.join(outside, "x.txt")))
attempt("move out", lambda: os.rename(os.path.join(outside, "keep.txt"), os.path.join(scratch, "x.txt")))
attempt("rmdir outside", lambda: os.rmdir(os.path.join(outside, "sub")))
attempt("mkdir outside", lambda: os.mkdir(os.path.join(outside, "d")))
attempt("symlink outside", lambda: os.symlink("/etc/passwd", os.path.join(outside, "l")))
attempt("read outside", lambda: open(os.path.join(outside, "keep.txt")).read())
attempt("read system", lambda: open("/etc/hostname" if os.path.exists("/etc/hostname") else sys.executable, "rb").read(1))
attempt("write inside", lambda: open(os.path.join(scratch, "a.txt"), "w").write("hi"))
attempt("mkdir inside", lambda: os.makedirs(os.path.join(scratch, "d", "e")))
attempt("rename inside", lambda: os.rename(os.path.join(scratch, "a.txt"), os.path.join(scratch, "d", "b.txt")))
attempt("delete inside", lambda: os.remove(os.path.join(scratch, "d", "b.txt")))
attempt("write devnull", lambda: open(os.devnull, "w").write("x"))
def old_fd():
    before.seek(0); before.write("changed\\n"); before.flush(); os.ftruncate(before.fileno(), 8)
attempt("write fd opened before", old_fd)
results["phrase"] = phrase
print(json.dumps(results))
""", str(scratch), str(outside))
    denied = "PermissionError:EACCES"
    for name in ("create outside", "overwrite outside", "append outside", "truncate outside", "delete outside",
                 "rename outside", "move out", "rmdir outside", "mkdir outside", "symlink outside"):
        if name == "truncate outside" and ABI < 3:
            continue  # truncate() is Landlock ABI 3
        assert res[name] == denied, (name, res[name])
    for name in ("read outside", "read system", "write inside", "mkdir inside", "rename inside", "delete inside",
                 "write devnull", "write fd opened before"):
        assert res[name] == "ok", (name, res[name])
    assert (outside / "keep.txt").read_text() == "changed\n"  # only through the descriptor opened before
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt", "sub"]
    if ABI >= 6 and SECCOMP:
        assert res["phrase"] == ""
    else:
        assert f"Landlock ABI {ABI}" in res["phrase"]


@needs_seccomp
def test_after_restrict_no_process_can_be_started_and_nothing_outlives_the_process(tmp_path):
    """No fork, no subprocess (so no daemon, nothing left when the worker dies), no chmod or chown, no System V
    IPC object, no bind (an abstract unix socket), no datagram to an address; threads and a socketpair work."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (tmp_path / "mine.txt").write_text("x")
    res = run_py(ATTEMPT + """
import ctypes, socket, subprocess, threading
from attn_drill.process import landlock
landlock.restrict(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
def sysv(name):
    if getattr(libc, name)(0, 64 if name == "shmget" else 1, 0o1600) == -1:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
attempt("fork", lambda: os._exit(0) if os.fork() == 0 else None)
attempt("subprocess", lambda: subprocess.run([sys.executable, "-c", "pass"]))
attempt("chmod", lambda: os.chmod(sys.argv[2], 0))
attempt("chmod in scratch", lambda: os.chmod(sys.argv[1], 0o700))
for name in ("shmget", "semget", "msgget"):
    attempt(name, lambda: sysv(name))
attempt("bind", lambda: socket.socket(socket.AF_UNIX).bind("\\0attn-drill-test"))
attempt("datagram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", sys.argv[2]))
a, b = socket.socketpair()
attempt("socketpair", lambda: a.send(b"x") and b.recv(1))
t = threading.Thread(target=lambda: results.__setitem__("thread", "ok"))
t.start()
t.join()
print(json.dumps(results))
""", str(scratch), str(tmp_path / "mine.txt"))
    for what in ("fork", "subprocess", "chmod", "chmod in scratch", "shmget", "semget", "msgget", "bind"):
        assert res[what] == "PermissionError:EPERM", (what, res)
    assert res["datagram"] == "PermissionError:EACCES", res
    assert res["socketpair"] == "ok" and res["thread"] == "ok", res
    assert (tmp_path / "mine.txt").stat().st_mode & 0o777 != 0


# -- landlock.restrict: network -------------------------------------------------------------------------------
@pytest.fixture
def listener():
    """A TCP and a UDP socket on one port of 127.0.0.1, opened before any restriction."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", port))
    tcp.setblocking(False)
    udp.setblocking(False)
    yield port, tcp, udp
    tcp.close()
    udp.close()


def nothing_arrived(tcp, udp) -> bool:
    for receive in (tcp.accept, lambda: udp.recvfrom(100)):
        try:
            receive()
            return False
        except BlockingIOError:
            pass
    return True


@needs_seccomp
def test_after_restrict_no_internet_socket_can_be_made_but_unix_ones_can(tmp_path, listener):
    port, tcp, udp = listener
    res = run_py(ATTEMPT + """
import ctypes
from attn_drill.process import landlock
port = int(sys.argv[2])
phrase = landlock.restrict(sys.argv[1])
attempt("tcp connect", lambda: socket.create_connection(("127.0.0.1", port), timeout=5))
attempt("udp socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
attempt("tcp6 socket", lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM))
attempt("raw socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("packet socket", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
attempt("netlink socket", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW))
def pair():
    a, b = socket.socketpair()
    a.sendall(b"x")
    assert b.recv(1) == b"x"
attempt("socketpair", pair)
attempt("unix socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
attempt("unix connect", lambda: socket.socket(socket.AF_UNIX).connect("/run/nothing-here"))
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
results["io_uring"] = "ok" if libc.syscall(425, 8, params) >= 0 else errno.errorcode[ctypes.get_errno()]
attempt("kill everyone", lambda: os.kill(-1, 0))
print(json.dumps(results))
""", str(tmp_path), str(port))
    for name in ("tcp connect", "udp socket", "tcp6 socket", "raw socket", "packet socket", "netlink socket",
                 "unix connect"):
        assert res[name] == "PermissionError:EACCES", (name, res[name])
    assert res["socketpair"] == "ok" and res["unix socket"] == "ok"
    assert res["io_uring"] == "ENOSYS"
    assert res["kill everyone"] == "PermissionError:EPERM"
    assert nothing_arrived(tcp, udp)


@pytest.mark.skipif(ABI < 4, reason=f"Landlock ABI {ABI}: no TCP rules before ABI 4")
def test_landlock_alone_blocks_tcp_connect_even_on_a_socket_made_before(tmp_path, listener):
    """The second wall, without the seccomp filter: a TCP socket that exists already cannot connect."""
    port, tcp, udp = listener
    res = run_py(ATTEMPT + """
from attn_drill.process import landlock
port = int(sys.argv[2])
made_before = socket.socket()
assert landlock._no_new_privs()
results["failed"] = landlock._landlock(landlock.abi(), sys.argv[1])
attempt("connect", lambda: made_before.connect(("127.0.0.1", port)))
attempt("bind", lambda: socket.socket().bind(("127.0.0.1", 0)))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close())
print(json.dumps(results))
""", str(tmp_path), str(port))
    assert res["failed"] == ""
    assert res["connect"] == "PermissionError:EACCES" and res["bind"] == "PermissionError:EACCES"
    assert res["udp"] == "ok"  # Landlock does not cover UDP: that is the seccomp filter's job
    assert nothing_arrived(tcp, udp)


# -- landlock.restrict: signals -------------------------------------------------------------------------------
@pytest.mark.skipif(ABI < 6, reason=f"Landlock ABI {ABI}: signals are scoped from ABI 6")
def test_after_restrict_other_processes_cannot_be_signalled(tmp_path):
    outsider = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        res = run_py(ATTEMPT + """
import signal
from attn_drill.process import landlock
landlock.restrict(sys.argv[1])
outsider = int(sys.argv[2])
attempt("kill outsider", lambda: os.kill(outsider, signal.SIGKILL))
attempt("kill parent", lambda: os.kill(os.getppid(), 0))
attempt("kill self", lambda: os.kill(os.getpid(), 0))
print(json.dumps(results))
""", str(tmp_path), str(outsider.pid))
        assert res["kill outsider"] == "PermissionError:EPERM" and res["kill parent"] == "PermissionError:EPERM"
        assert res["kill self"] == "ok"  # (it can start no child: see above)
        assert outsider.poll() is None
    finally:
        outsider.kill()
        outsider.wait()


# -- landlock.restrict: torch still works ---------------------------------------------------------------------
@needs_landlock
def test_torch_and_faulthandler_work_after_restrict(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    res = run_py("""
import faulthandler, json, sys
import torch
from attn_drill.process import landlock
faults = open(sys.argv[2], "w")
phrase = landlock.restrict(sys.argv[1])
a = torch.randn(64, 48, dtype=torch.float64, requires_grad=True)
out = torch.softmax(a @ a.T / 8, dim=-1) @ a
out.sum().backward()
half = (torch.randn(8, 8).half() @ torch.randn(8, 8).half()).float()
meta = torch.randn(2, 3, 5, device="meta") @ torch.randn(2, 5, 7, device="meta")
faulthandler.dump_traceback(file=faults)
faults.flush()
print(json.dumps({"grad": a.grad.shape == a.shape and bool(torch.isfinite(a.grad).all()),
                  "half": bool(torch.isfinite(half).all()), "meta": list(meta.shape), "phrase": phrase}))
""", str(scratch), str(tmp_path / "faults.txt"))
    assert res["grad"] and res["half"] and res["meta"] == [2, 3, 7]
    assert "File" in (tmp_path / "faults.txt").read_text()


# -- sandbox.confine(scratch=...) -----------------------------------------------------------------------------
@needs_linux
def test_confine_with_a_scratch_folder_moves_in_and_walls_it(tmp_path):
    """The worker's own descriptors (a log on fd 1, the fault file) keep working; a segfault's stack
    still reaches the fault file; cwd and the temp folder are the scratch folder."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    faults = tmp_path / "faults.txt"
    code = textwrap.dedent("""
        import json, os, sys, tempfile
        import torch
        from attn_drill.process import sandbox
        scratch = sys.argv[1]
        fault_fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        phrase = sandbox.confine(fault_fd, scratch=scratch)
        sandbox.begin_job()
        print("printed after confine")
        try:
            open(sys.argv[3], "w")
            outside = "written"
        except PermissionError:
            outside = "denied"
        with tempfile.TemporaryFile() as t:
            t.write(b"x")
        facts = {"phrase": phrase, "stored": sandbox.not_enforced, "cwd": os.getcwd(), "tmpdir": os.environ["TMPDIR"],
                 "gettempdir": tempfile.gettempdir(), "temp": os.environ["TEMP"], "outside": outside,
                 "output": sandbox.job_output(), "sum": float((torch.ones(3, 3) @ torch.ones(3, 3)).sum())}
        with open(os.path.join(scratch, "facts.json"), "w") as f:
            json.dump(facts, f)
        import faulthandler
        faulthandler._sigsegv()
    """)
    log = tmp_path / "log.txt"
    with open(log, "w+") as out:  # read and write, as the runner's log file
        r = subprocess.run([sys.executable, "-c", code, str(scratch), str(faults), str(tmp_path / "out.txt")],
                           stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == -signal.SIGSEGV, log.read_text()
    facts = json.loads((scratch / "facts.json").read_text())
    assert facts["cwd"] == facts["tmpdir"] == facts["temp"] == facts["gettempdir"] == str(scratch)
    assert facts["output"] == "printed after confine" and facts["sum"] == 27.0
    assert facts["phrase"] == facts["stored"]
    assert "Fatal Python error" in faults.read_text() and "line" in faults.read_text()
    if ABI >= 1:
        assert facts["outside"] == "denied" and not (tmp_path / "out.txt").exists()
    if ABI >= 6 and SECCOMP:
        assert facts["phrase"] == ""


def test_confine_without_a_scratch_folder_says_nothing_is_walled_in():
    code = """
import json, os
from attn_drill.process import sandbox
phrase = sandbox.confine()
os.write(3, json.dumps({"phrase": phrase, "cwd": os.getcwd()}).encode())
"""
    r, w = os.pipe()
    proc = subprocess.Popen([sys.executable, "-c", f"import os; os.dup2({w}, 3)\n" + code], pass_fds=(w,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        said = f.read()
    assert proc.wait(timeout=300) == 0
    facts = json.loads(said)
    assert "not protected" in facts["phrase"] and facts["cwd"] == os.getcwd()


# -- what restrict() says when a wall is missing (no kernel needed: the parts are stubbed) -------------------
@pytest.fixture
def stubbed(monkeypatch):
    """restrict() with its system calls replaced: never confines the test process, nor takes its powers."""
    state = {"landlock": (7, ""), "sockets": landlock._Result(True), "nnp": True, "applied": ""}
    monkeypatch.setattr(landlock.sys, "platform", "linux")
    monkeypatch.setattr(landlock, "_no_new_privs", lambda: state["nnp"])
    monkeypatch.setattr(landlock, "_drop_capabilities", lambda: None)  # (run as root, the test process keeps them)
    monkeypatch.setattr(landlock, "_why_no_landlock", lambda: state["landlock"])
    monkeypatch.setattr(landlock, "_block_sockets", lambda: state["sockets"])
    monkeypatch.setattr(landlock, "_landlock", lambda version, path, *reads: state["applied"])
    return state


def _capabilities() -> str:
    try:
        return next(line for line in open("/proc/self/status") if line.startswith("CapEff"))
    except (OSError, StopIteration):
        return ""


def test_restrict_says_nothing_when_everything_is_in_force(stubbed):
    before = _capabilities()
    assert landlock.restrict("/x") == ""
    assert _capabilities() == before  # the test process keeps what it had


def test_restrict_names_what_is_missing_without_landlock(stubbed):
    stubbed["landlock"] = (0, "Landlock is not available on this kernel")
    said = landlock.restrict("/x")
    assert said.startswith("Landlock is not available on this kernel: files outside the scratch folder are not "
                           "protected")
    assert "network" not in said  # the seccomp filter still blocks it


def test_restrict_names_each_missing_piece_by_abi(stubbed):
    stubbed["landlock"] = (3, "")
    assert landlock.restrict("/x") == "Landlock ABI 3: other processes can be sent signals"
    stubbed["sockets"] = landlock._Result(False, "no seccomp filter for riscv64")
    assert landlock.restrict("/x") == ("Landlock ABI 3: other processes can be sent signals; "
                                       "no seccomp filter for riscv64: network not blocked")
    stubbed["landlock"] = (5, "")
    assert landlock.restrict("/x").endswith("UDP, raw and unix sockets are not blocked")
    stubbed["landlock"], stubbed["applied"] = (7, ""), "landlock_restrict_self: Operation not permitted"
    assert landlock.restrict("/x").startswith("Landlock failed (landlock_restrict_self: Operation not permitted): "
                                              "files outside")
    stubbed["nnp"] = False
    assert "nothing is confined" in landlock.restrict("/x")


def test_restrict_never_raises(stubbed, monkeypatch):
    def boom(version, path, *reads):
        raise ValueError("odd")

    monkeypatch.setattr(landlock, "_landlock", boom)
    assert "nothing is confined" in landlock.restrict("/x") and "odd" in landlock.restrict("/x")


def test_elsewhere_nothing_is_available_and_nothing_raises(monkeypatch):
    monkeypatch.setattr(landlock.sys, "platform", "darwin")
    assert landlock.abi() == 0
    assert "Linux only" in landlock.restrict("/x")
    monkeypatch.setattr(orphans.sys, "platform", "darwin")
    assert orphans.become_subreaper() is False and orphans.kill_adopted(set()) == []


@needs_linux
def test_abi_is_what_the_kernel_says():
    assert isinstance(ABI, int) and ABI >= 0
    if os.path.exists("/sys/kernel/security/lsm"):
        try:
            listed = "landlock" in Path("/sys/kernel/security/lsm").read_text().split(",")
        except OSError:
            return
        assert (ABI > 0) == listed


def test_the_seccomp_program_is_well_formed():
    for arch in landlock._NR:
        prog = landlock._program(arch)
        assert 0 < len(prog) < 64
        assert prog[-1][0] == landlock._RET and prog[0] == (landlock._LD_W_ABS, 0, 0, 4)
        for i, (code, jt, jf, _) in enumerate(prog):
            if code in (landlock._JEQ, landlock._JGE, landlock._JSET):
                assert i + 1 + max(jt, jf) < len(prog)  # every jump lands on an instruction, forward


# -- orphans ----------------------------------------------------------------------------------------------
@needs_linux
def test_children_lists_our_direct_children():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert child.pid in orphans.children()
    finally:
        child.kill()
        child.wait()
    assert child.pid not in orphans.children()


@needs_linux
def test_a_subreaper_adopts_a_setsid_grandchild_and_kill_adopted_kills_it_and_its_group():
    res = run_py("""
import json, os, subprocess, sys, time
from attn_drill.process import orphans
assert orphans.become_subreaper()
keep = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # known: spared
known = orphans.children()
# the child double-forks: the grandchild calls setsid and runs a shell with a background sleep in its
# group, then the child exits, so the grandchild is an orphan, handed to us
daemon = '''
import os, sys
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)  # or the caller's pipes stay open until it dies
        os.execv("/bin/sh", ["sh", "-c", "sleep 600 & exec sleep 600"])
    os.write(w, str(pid).encode())
    os._exit(0)
os.close(w)
print(os.read(r, 32).decode())
'''
out = subprocess.run([sys.executable, "-c", daemon], capture_output=True, text=True, check=True, timeout=120).stdout
grandchild = int(out)
end = time.monotonic() + 60
while grandchild not in orphans.children() and time.monotonic() < end:
    time.sleep(0.05)
adopted = grandchild in orphans.children()
group = os.getpgid(grandchild)
killed = orphans.kill_adopted(known)
left = [p for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/stat")
        and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[2] == str(group)]
facts = {"adopted": adopted, "killed": killed, "grandchild": grandchild, "group_left": left,
         "keep_alive": keep.poll() is None, "children_after": sorted(orphans.children()), "known": sorted(known),
         "session": os.getsid(0) != group}
keep.kill(); keep.wait()
print(json.dumps(facts))
""")
    assert res["adopted"] and res["session"]
    assert res["grandchild"] in res["killed"]
    assert res["group_left"] == []  # the background sleep in its group went too
    assert res["keep_alive"] and res["children_after"] == res["known"]  # nothing of theirs left, ours spared


@needs_linux
@pytest.mark.parametrize("how", ["pdeathsig", "watchdog"])
def test_a_worker_that_called_die_with_parent_dies_when_its_parent_is_killed(how):
    stub = "orphans._prctl = lambda *a: False\n" if how == "watchdog" else ""
    child_code = ("import sys, time\nfrom attn_drill.process import orphans\n" + stub +
                  "assert orphans.die_with_parent()\nprint('armed', flush=True)\ntime.sleep(600)\n")
    parent_code = textwrap.dedent("""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE, text=True,
                                 start_new_session=True)
        assert child.stdout.readline().strip() == "armed"
        print(child.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", parent_code, child_code], stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = int(parent.stdout.readline())
        parent.kill()
        parent.wait()
        end = time.monotonic() + WAIT
        while alive(child) and time.monotonic() < end:
            time.sleep(0.05)
        assert not alive(child), f"pid {child} outlived its parent by {WAIT:g} s"
    finally:
        parent.kill()
        parent.wait()
        if child is not None and alive(child):
            os.kill(child, signal.SIGKILL)


def alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it has died)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


@needs_linux
def test_die_with_parent_exits_at_once_if_the_parent_is_already_gone():
    r = subprocess.run([sys.executable, "-c", "from attn_drill.process import orphans\n"
                        "orphans.die_with_parent(parent=-5)\nprint('still here')"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "still here" not in r.stdout


# -- the hostile files, through the real command line ----------------------------------------------------------
HOSTILE = Path(__file__).parent / "hostile" / "sdpa"
MARK = "attn-drill-hostile-daemon"


def daemons() -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and MARK.encode() in Path(f"/proc/{name}/cmdline").read_bytes() and alive(int(name)):
                found.append(int(name))
        except OSError:
            pass
    return found


@pytest.mark.skipif(ABI < 1 or not SECCOMP, reason="needs Landlock and the seccomp filter")
def test_hostile_files_pass_and_leave_home_neighbours_network_and_processes_alone(tmp_path, listener, home,
                                                                                monkeypatch):
    from conftest import attn_drill_script

    port, tcp, udp = listener
    practice = tmp_path / "attn-practice"
    practice.mkdir()
    victim = practice / "sdpa.py"  # the home wrecker, where a user's file lives, beside another exercise
    victim.write_text((HOSTILE / "ok__tries_to_delete_home.py").read_text())
    (practice / "mha.py").write_text("# my mha, a week of work\n")
    home.mkdir(parents=True, exist_ok=True)
    (home / "bait.json").write_text('{"keep": true}\n')
    log = tmp_path / "daemon.log"
    monkeypatch.setenv("ATTN_DRILL_HOSTILE_PORT", str(port))
    monkeypatch.setenv("ATTN_DRILL_HOSTILE_LOG", str(log))
    files = [victim, HOSTILE / "ok__tries_network.py", HOSTILE / "ok__setsid_daemon.py"]
    before = set(daemons())
    r = subprocess.run([attn_drill_script(), "check", *map(str, files), "-e", "sdpa", "--json", "--seed", "7"],
                       capture_output=True, text=True, timeout=300)
    reports = [json.loads(line) for line in r.stdout.splitlines()]
    assert [Path(d["file"]).name for d in reports] == ["sdpa.py", "ok__tries_network.py", "ok__setsid_daemon.py"]
    for d in reports:
        assert d["passed"], d
        assert d["confinement"] == ("" if ABI >= 6 else f"Landlock ABI {ABI}: other processes can be sent signals")
    assert (home / "bait.json").read_text() == '{"keep": true}\n' and not (home / "pwned.txt").exists()
    assert (practice / "mha.py").read_text() == "# my mha, a week of work\n" and victim.exists()
    assert nothing_arrived(tcp, udp)
    said = reports[2]["output"]
    if SECCOMP:  # no process can be started at all
        assert "could not leave a daemon: [Errno 1] Operation not permitted" in said, said
    else:
        assert "left a daemon behind, pid " in said
        pid = int(said.rsplit("pid ", 1)[1].split()[0])
        assert not alive(pid)
    assert set(daemons()) <= before
    assert not log.exists()


@needs_seccomp
@pytest.mark.skipif(os.geteuid() != 0, reason="only a worker run as root has powers to give up")
def test_a_root_worker_gives_up_roots_powers(tmp_path):
    """Run as root, the worker keeps uid 0 but no capability: another user's private file stays closed to it."""
    secret = tmp_path / "theirs.txt"
    secret.write_text("not yours")
    os.chown(secret, 65534, 65534)
    secret.chmod(0o600)
    res = run_py(ATTEMPT + """
from attn_drill.process import landlock
landlock.restrict(sys.argv[1])
attempt("read", lambda: open(sys.argv[2]).read())
results["caps"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
print(json.dumps(results))
""", str(tmp_path), str(secret))
    assert res["read"] == "PermissionError:EACCES" and int(res["caps"], 16) == 0, res


@needs_landlock
def test_with_readable_paths_only_those_and_the_scratch_folder_can_be_read(tmp_path):
    scratch, allowed, listed, outside = (tmp_path / n for n in ("scratch", "allowed", "listed", "outside"))
    for folder in (scratch, allowed, listed, outside):
        folder.mkdir()
        (folder / "a.txt").write_text("a\n")
    (listed / "helper.py").write_text("X = 1\n")
    res = run_py(ATTEMPT + """
from attn_drill.process import landlock
scratch, allowed, listed, outside = sys.argv[1:5]
results["phrase"] = landlock.restrict(scratch, [allowed, os.path.join(listed, "helper.py"), "/proc/self"], [listed])
attempt("read scratch", lambda: open(os.path.join(scratch, "a.txt")).read())
attempt("read allowed", lambda: open(os.path.join(allowed, "a.txt")).read())
attempt("read allowed file", lambda: open(os.path.join(listed, "helper.py")).read())
attempt("list listed", lambda: os.listdir(listed))
attempt("read beside it", lambda: open(os.path.join(listed, "a.txt")).read())
attempt("read outside", lambda: open(os.path.join(outside, "a.txt")).read())
attempt("list outside", lambda: os.listdir(outside))
attempt("read own proc", lambda: open("/proc/self/status").read())
attempt("read parent proc", lambda: open(f"/proc/{os.getppid()}/status").read())
print(json.dumps(results))
""", str(scratch), str(allowed), str(listed), str(outside))
    for name in ("read scratch", "read allowed", "read allowed file", "list listed", "read own proc"):
        assert res[name] == "ok", (name, res)
    for name in ("read beside it", "read outside", "list outside", "read parent proc"):
        assert res[name] == "PermissionError:EACCES", (name, res)


@pytest.mark.skipif(ABI < 1 or not SECCOMP, reason="needs Landlock and the seccomp filter")
def test_checked_code_reads_its_helpers_but_no_secret_home_or_other_process(tmp_path, home, monkeypatch):
    """Through the CLI: a correct file that tries to read a secret, attn-drill's home, its parent's environment,
    /etc and a non-Python file beside it is refused each, imports its helper module, and passes."""
    from conftest import attn_drill_script

    practice, private = tmp_path / "attn-practice", tmp_path / "dot-ssh"
    practice.mkdir()
    private.mkdir()
    (private / "id_ed25519").write_text("PRIVATE KEY\n")
    home.mkdir(parents=True, exist_ok=True)
    (home / "bait.json").write_text('{"keep": true}\n')
    (practice / "notes.txt").write_text("my notes\n")
    (practice / "helpers.py").write_text("GREETING = 'helper imported'\n")
    victim = practice / "sdpa.py"
    victim.write_text((HOSTILE / "ok__tries_to_read_secrets.py").read_text().replace(
        "import torch\n", "import torch\nfrom helpers import GREETING\nprint(GREETING)\n", 1))
    monkeypatch.setenv("ATTN_DRILL_HOSTILE_SECRET", str(private / "id_ed25519"))
    r = subprocess.run([attn_drill_script(), "check", str(victim), "-e", "sdpa", "--json", "--seed", "7",
                        "--no-record"], capture_output=True, text=True, timeout=300)
    report = json.loads(r.stdout)
    assert report["passed"], report
    said = report["output"]
    assert "helper imported" in said and "read own status: ok" in said, said
    for name in ("secret", "home", "parent environ", "etc", "beside"):
        assert f"read {name}: PermissionError" in said, (name, said)


def test_readable_holds_the_packages_beside_a_file_but_no_other_subfolder(tmp_path):
    """`from mylib.ops import probs` beside the exercise is the user's own code: a folder with an __init__.py is
    readable; a plain subfolder, a hidden one (even with an __init__.py) and the folder's other files are not."""
    from attn_drill.process import sandbox

    for name in ("mylib", ".secrets", "notes"):
        (tmp_path / name).mkdir()
    (tmp_path / "mylib" / "__init__.py").write_text("")
    (tmp_path / ".secrets" / "__init__.py").write_text("")
    (tmp_path / "helpers.py").write_text("X = 1\n")
    (tmp_path / "data.txt").write_text("private\n")
    exercise = tmp_path / "sdpa.py"
    exercise.write_text("import mylib\n")
    paths, listed = sandbox.readable([str(exercise)])
    assert str(tmp_path / "mylib") in paths and str(tmp_path / "helpers.py") in paths
    assert not {str(tmp_path / n) for n in (".secrets", "notes", "data.txt")} & set(paths)
    assert listed == [str(tmp_path)]
