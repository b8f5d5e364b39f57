"""Confine the process that runs a user's code: write only to its scratch folder, no network, no signals
to other processes. Linux only, through the kernel's own calls (ctypes); no torch, no dependency.

`restrict(writable)` applies, to the calling thread and every process it starts from then on:

- Landlock (Linux 5.13+, if the kernel has it enabled): files and folders may be created, written,
  truncated, renamed, linked or removed only beneath `writable` (plus writing to /dev/null and the like,
  and to GPU device files, which CUDA opens read-write). With `readable`, files may be read only beneath
  `writable` and those paths (sandbox.readable says which); without, reading stays allowed everywhere.
  Descriptors opened before the call keep what they could do: the worker's report channel, its log and
  fault files.
  From Landlock ABI 4 no TCP bind or connect at all; from ABI 6 no abstract unix sockets and no signals to
  processes outside the sandbox (the user's code cannot kill the CLI or the warm server).
- a seccomp filter (any Linux on x86_64 or aarch64): socket() fails with EACCES for every family but
  AF_UNIX (so UDP, raw and packet sockets too, which Landlock does not cover), connect() fails with EACCES
  (that leaves unix sockets only for socketpair(), which needs no connect: no docker.sock, no D-Bus),
  kill(-1, ...) (every process we may signal) fails with EPERM, io_uring is unavailable (it could open
  and connect sockets without those system calls), and so is any system call made through another ABI
  (x32, i386 `int 0x80`), which the filter would not recognise. No new process: fork, vfork and a clone()
  that is not a thread fail with EPERM (clone3 with ENOSYS, so libc falls back to clone), so nothing the
  code starts can outlive the worker, which dies with the CLI. No permission or owner changes (the chmod
  and chown family), no System V IPC objects (shmget, semget, msgget), no bind() (an abstract unix socket
  that would outlive the check), no datagram sent to an address (sendto with one, sendmsg, sendmmsg).
  Applied to every thread (TSYNC).

It never raises: it returns "" when all of that is in force, else a phrase saying what is not and why.

What it does not do: the threads that already run beside the caller (torch starts one at import) keep
Landlock's freedom (the seccomp filter reaches them): see docs/how-a-check-works.md's list of what is not
walled off.
"""

from __future__ import annotations

import errno
import os
import platform
import stat
import sys

# -- Landlock ----------------------------------------------------------------------------------------------
# <linux/landlock.h>. The three calls have the same numbers on every architecture but alpha.
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_MACHINES = {"x86_64", "amd64", "aarch64", "arm64", "armv7l", "armv8l", "riscv64", "ppc64le", "ppc64", "s390x",
             "i686", "i386", "loongarch64"}
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1

# filesystem rights, with the ABI that introduced each
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_REMOVE_DIR, _REMOVE_FILE, _MAKE_CHAR, _MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
_MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
_REFER = 1 << 13  # ABI 2: rename or link a file into another folder
_TRUNCATE = 1 << 14  # ABI 3: truncate(), open(O_TRUNC)
_WRITES_V1 = (_WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG | _MAKE_SOCK
              | _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM)
# network rights (ABI 4) and scopes (ABI 6)
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

# Device files anyone may write to, and those CUDA / ROCm open read-write (a GPU check runs after the
# restriction). Each is allowed WRITE_FILE and TRUNCATE only: no creating or removing anything there.
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/kfd", "/dev/dri",
            "/dev/nvidia-caps")
_DEVICE_PREFIXES = ("nvidia",)  # /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm, ...

_libc = None


def _syscall():
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.prctl.restype = ctypes.c_int
        _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return _libc


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()


def _why_no_landlock() -> tuple[int, str]:
    """(ABI, "") or (0, why not)."""
    if not sys.platform.startswith("linux"):
        return 0, "Landlock is Linux only"
    if platform.machine().lower() not in _MACHINES:
        return 0, f"Landlock is not supported here on {platform.machine()}"
    try:
        libc = _syscall()
        version = libc.syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0, "Landlock cannot be reached from Python here"
    if version >= 1:
        return int(version), ""
    if _errno() == errno.EOPNOTSUPP:
        return 0, "Landlock is built into this kernel but not enabled (see the lsm= boot option)"
    return 0, "Landlock is not available on this kernel"


def abi() -> int:
    """The Landlock ABI version this kernel offers; 0 when it has none (or this is not Linux)."""
    return _why_no_landlock()[0]


def restrict(writable: str, readable: list[str] | None = None, listable: list[str] = ()) -> str:
    """Confine the calling process (and its future children) as the module says: writes only beneath
    `writable`, no network, no signals out; with `readable`, reads too: only beneath `writable` and those
    paths (a folder: everything beneath it; a file: that file), plus the listing of the folders in
    `listable` (not their files). "" if all of that is in force, else what is not, and why."""
    try:
        return _restrict(writable, readable, listable)
    except Exception as e:  # noqa: BLE001 - never let the sandbox be the reason a check fails
        return f"the sandbox could not be set up ({type(e).__name__}: {e}): nothing is confined"


def _restrict(writable: str, readable: list[str] | None, listable: list[str] = ()) -> str:
    if not sys.platform.startswith("linux"):
        return "files, network and other processes are not protected on this system (Linux only)"
    if not _no_new_privs():  # Landlock and seccomp both refuse without it (we are not CAP_SYS_ADMIN)
        return "the sandbox could not be set up (prctl(PR_SET_NO_NEW_PRIVS) failed): nothing is confined"
    _drop_capabilities()
    sockets = _block_sockets()
    version, why = _why_no_landlock()
    if version:
        failed = _landlock(version, writable, readable, listable)
        if failed:
            version, why = 0, f"Landlock failed ({failed})"
    missing = []
    if not version:
        missing.append(f"{why}: files outside the scratch folder are not protected, and other processes can be "
                       "sent signals")
    elif version < 6:
        missing.append(f"Landlock ABI {version}: other processes can be sent signals")
    if not sockets:
        what = "UDP, raw and unix sockets are not blocked" if version >= 4 else "network not blocked"
        missing.append(f"{sockets.why}: {what}")
    return "; ".join(missing)


def _drop_capabilities() -> None:
    """Run as root, a worker would still hold root's powers (reading any file, any process's /proc files):
    give up every capability, for good. Nothing changes for an ordinary user, who holds none."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    try:
        libc = _syscall()
        _PR_CAPBSET_DROP = 24
        for cap in range(64):  # the bounding set first (needs CAP_SETPCAP, which root has until the capset)
            if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                break
        header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words
        libc.capset(ctypes.byref(header), data)
    except (OSError, AttributeError):
        pass


def _no_new_privs() -> bool:
    _PR_SET_NO_NEW_PRIVS = 38
    try:
        return _syscall().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _landlock(version: int, writable: str, readable: list[str] | None = None, listable: list[str] = ()) -> str:
    """Build and apply the ruleset; "" on success, else what failed."""
    import ctypes

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                    ("scoped", ctypes.c_uint64)]

    class PathBeneathAttr(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    writes = _WRITES_V1 | (_REFER if version >= 2 else 0) | (_TRUNCATE if version >= 3 else 0)
    reads = (_READ_FILE | _READ_DIR) if readable is not None else 0
    attr = RulesetAttr(writes | reads, 0, 0)
    size = 8  # the struct as ABI 1-3 know it; the kernel refuses fields it does not know unless they are 0
    if version >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP  # and no rule allows any port
        size = 16
    if version >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        size = 24
    libc = _syscall()
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        return f"landlock_create_ruleset: {os.strerror(_errno())}"
    try:
        device_rights = _WRITE_FILE | (_TRUNCATE if version >= 3 else 0) | (reads & _READ_FILE)
        rules = [(writable, writes | reads)] + [(path, device_rights) for path in _device_paths()]
        rules += [(path, reads) for path in readable or ()] + [(path, reads & _READ_DIR) for path in listable]
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a scratch folder that is gone leaves nothing writable: stricter, not looser
            try:
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    rights &= ~_READ_DIR  # a file: the kernel refuses folder rights on it
                rule = PathBeneathAttr(rights, fd)
                if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                                ctypes.byref(rule), 0) < 0 and path == writable:
                    return f"landlock_add_rule({path}): {os.strerror(_errno())}"
            finally:
                os.close(fd)
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), 0) < 0:
            return f"landlock_restrict_self: {os.strerror(_errno())}"
    finally:
        os.close(ruleset)
    return ""


def _device_paths() -> list[str]:
    found = [p for p in _DEVICES if os.path.exists(p)]
    try:
        found += [os.path.join("/dev", n) for n in sorted(os.listdir("/dev")) if n.startswith(_DEVICE_PREFIXES)]
    except OSError:
        pass
    return found


# -- seccomp -----------------------------------------------------------------------------------------------
# A classic BPF program run on every system call (struct seccomp_data: nr at offset 0, arch at 4, the
# arguments from 16, 8 bytes each; we read the low 32 bits of the first one, so little-endian only).
_AUDIT_ARCH = {"x86_64": 0xC000003E, "amd64": 0xC000003E, "aarch64": 0xC00000B7, "arm64": 0xC00000B7}
_NR = {  # socket, connect, kill, the three io_uring calls, seccomp, and the calls refused outright (EPERM)
    0xC000003E: {"socket": 41, "connect": 42, "kill": 62, "io_uring": (425, 427), "seccomp": 317, "clone": 56,
                 "clone3": 435, "sendto": 44,
                 # fork, vfork; chmod, fchmod, chown, fchown, lchown, fchownat, fchmodat, fchmodat2; shmget,
                 # semget, msgget; bind; sendmsg, sendmmsg
                 "refused": (57, 58, 90, 91, 92, 93, 94, 260, 268, 452, 29, 64, 68, 49, 46, 307)},
    0xC00000B7: {"socket": 198, "connect": 203, "kill": 129, "io_uring": (425, 427), "seccomp": 277, "clone": 220,
                 "clone3": 435, "sendto": 206,
                 # (no fork, vfork, chmod, chown or lchown here) fchmod, fchmodat, fchownat, fchown, fchmodat2;
                 # shmget, semget, msgget; bind; sendmsg, sendmmsg
                 "refused": (52, 53, 54, 55, 452, 194, 190, 186, 200, 211, 269)},
}
_CLONE_THREAD = 0x00010000  # clone() for a thread (allowed) rather than a process (refused)
_X32_BIT = 0x40000000  # x86_64: system calls of the x32 ABI carry this bit, with the same arch value
_AF_UNIX = 1

# BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_JMP|BPF_JGE|BPF_K, BPF_RET|BPF_K
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_ERRNO = 0x00050000  # SECCOMP_RET_ERRNO | errno


class _Result:
    """A bool with a reason attached."""

    def __init__(self, ok: bool, why: str = ""):
        self.ok, self.why = ok, why

    def __bool__(self) -> bool:
        return self.ok


def _program(arch: int) -> list[tuple[int, int, int, int]]:
    """The filter, as (code, jump if true, jump if false, k); jumps count the instructions they skip."""
    nr = _NR[arch]
    lo, hi = nr["io_uring"]
    # Written with labels, resolved below. Every path ends in one of the three returns at the bottom.
    code = [
        ("ld", 4),  # arch
        ("jeq", arch, None, "nosys"),  # another ABI's system call numbers mean other calls: refuse them all
        ("ld", 0),  # nr
        *([("jge", _X32_BIT, "nosys", None)] if arch == 0xC000003E else []),
        ("jeq", nr["socket"], "socket", None),
        ("jeq", nr["connect"], "eacces", None),
        ("jeq", nr["kill"], "kill", None),
        ("jeq", nr["clone"], "clone", None),
        ("jeq", nr["clone3"], "nosys", None),  # its flags are behind a pointer: libc then falls back to clone()
        ("jeq", nr["sendto"], "sendto", None),
        *[("jeq", n, "eperm", None) for n in nr["refused"]],
        ("jge", lo, None, "allow"),
        ("jge", hi + 1, "allow", "nosys"),  # io_uring_setup, _enter, _register
        ("label", "socket"),
        ("ld", 16),  # socket(domain, type, protocol): the domain
        ("jeq", _AF_UNIX, "allow", "eacces"),
        ("label", "kill"),
        ("ld", 16),  # kill(pid, sig): pid -1 means every process we may signal (before Landlock ABI 6: all
        ("jeq", 0xFFFFFFFF, "eperm", "allow"),  # of the user's, the CLI and their desktop among them)
        ("label", "clone"),
        ("ld", 16),  # clone(flags, ...): a thread shares the process; a new process is refused
        ("jset", _CLONE_THREAD, "allow", "eperm"),
        ("label", "sendto"),
        ("ld", 56),  # sendto(fd, buf, len, flags, addr, addrlen): to a connected socket only (addrlen 0)
        ("jeq", 0, "allow", "eacces"),
        ("label", "allow"), ("ret", _ALLOW),
        ("label", "eacces"), ("ret", _ERRNO | errno.EACCES),
        ("label", "eperm"), ("ret", _ERRNO | errno.EPERM),
        ("label", "nosys"), ("ret", _ERRNO | errno.ENOSYS),
    ]
    where, n = {}, 0
    for ins in code:
        if ins[0] == "label":
            where[ins[1]] = n
        else:
            n += 1
    out = []
    for ins in code:
        if ins[0] == "label":
            continue
        i = len(out)
        if ins[0] == "ld":
            out.append((_LD_W_ABS, 0, 0, ins[1]))
        elif ins[0] == "ret":
            out.append((_RET, 0, 0, ins[1]))
        else:
            jt, jf = (0 if t is None else where[t] - i - 1 for t in ins[2:])
            out.append(({"jeq": _JEQ, "jge": _JGE, "jset": _JSET}[ins[0]], jt, jf, ins[1]))
    return out


def _block_sockets() -> _Result:
    """Install the filter (on every thread of the process, where the kernel can)."""
    arch = _AUDIT_ARCH.get(platform.machine().lower())
    if arch is None or sys.byteorder != "little":
        return _Result(False, f"no seccomp filter for {platform.machine()}")
    import ctypes

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    program = _program(arch)
    filters = (SockFilter * len(program))(*[SockFilter(*ins) for ins in program])
    prog = SockFprog(len(program), filters)
    libc = _syscall()
    _SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC = 1, 1
    # seccomp() with TSYNC puts the filter on all our threads at once; prctl() only on this one
    if libc.syscall(ctypes.c_long(_NR[arch]["seccomp"]), ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
                    ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(prog)) == 0:
        return _Result(True)
    _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) == 0:
        return _Result(True)
    return _Result(False, f"seccomp failed ({os.strerror(_errno())})")
