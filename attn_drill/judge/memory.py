"""What memory the user's code allocates: every new tensor storage, live bytes over time, their peak.

A torch dispatch mode sees the output of every aten op, the ones inside composite calls (matmul, einsum)
and custom autograd functions included, so no allocation of a whole tensor escapes it. A storage counts
from the op that first returns it until it is freed (a weakref callback on the storage fires then).

Two uses (flash): a rule, "no tensor may hold `limit` entries or more per (batch, head)" (the full score
matrix), which stops the user's code at the op that breaks it; and the peak of live bytes while the code
runs, to set the user's version beside the blockwise reference's.

Cost: a TorchDispatchMode's handler is normally wrapped to keep torch._dynamo out of it, and that wrapper
imports dynamo on first use (about 2.5 s here). The checker never compiles, so `_should_skip_dynamo` says
no: the first use then costs a few milliseconds. If torch drops that hook, the first use is slower, no more.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attn_drill.i18n import t


@dataclass
class Allocation:
    op: str  # the aten op that returned it, e.g. "aten.bmm"
    shape: tuple[int, ...]
    dtype: str
    entries: int  # elements its storage holds
    per_head: int  # of those, per (batch, head)
    line: int | None  # the user's line that was running


class TensorTooLarge(RuntimeError):
    """Raised inside the user's code at the op that makes a tensor with `limit` entries or more per (batch, head)."""

    checker_stop = True  # the checker's own stop, not the user's exception (diagnoses/generic.py skips it)

    def __init__(self, alloc: Allocation, limit: int):
        self.alloc, self.limit = alloc, limit
        super().__init__(alloc, limit)

    def __str__(self) -> str:  # worded when said (raised inside the user's code, it is said after the call)
        a = self.alloc
        return t("evidence.core.memory.too_large", op=a.op, shape=a.shape, per_head=a.per_head, limit=self.limit)


class TooSlow(RuntimeError):
    """Raised inside the user's code when a measurement runs past its deadline."""


class Allocations(TorchDispatchMode):
    """Tracks the storages allocated while it is on: live bytes, their peak, the biggest allocation, and the
    first one with `limit` entries or more per (batch, head) (then raises TensorTooLarge, unless `stop` is False).

    `heads` = (B, H): a tensor laid out (B, H, ...) or (B * H, ...) holds B * H heads' worth of entries."""

    def __init__(self, user_file: str | None = None, limit: int | None = None, heads: tuple[int, int] = (1, 1),
                 stop: bool = True, deadline: float | None = None, tokens: int | None = None):
        super().__init__()
        self.user_file, self.limit, self.heads, self.stop, self.deadline = user_file, limit, heads, stop, deadline
        self.tokens = tokens  # T: a leading axis of B * H * T (batch, heads and positions flattened) is per head too
        self.live: dict[int, int] = {}  # storage id -> bytes, while it is alive
        self._refs: dict[int, weakref.ref] = {}
        self.now = self.peak = 0
        self.biggest: Allocation | None = None
        self.too_big: Allocation | None = None
        self.late = False

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # see the module's docstring: keeps the first use fast

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.late = True  # remembered: the code may catch the exception and carry on
            raise TooSlow("the measurement ran past its time limit")
        given = {_key(x) for x in _tensors((args, kwargs))}
        out = func(*args, **kwargs)
        for x in _tensors(out):
            self._see(func, x, given)
        return out

    def _see(self, func, t: torch.Tensor, given: set) -> None:
        key = _key(t)
        if key is None or (key in given and key not in self.live):
            return  # a view of (or a write into) a tensor this code did not allocate: the inputs, a global
        storage = t.untyped_storage()
        nbytes = storage.nbytes()
        grown = nbytes - self.live.get(key, 0)
        if grown <= 0:
            return  # seen before and not grown (an out= or a resize_ can grow one)
        if key not in self.live:
            self._refs[key] = weakref.ref(storage, lambda _, key=key: self._free(key))
        self.live[key] = nbytes
        self.now += grown
        self.peak = max(self.peak, self.now)
        self._size(func, t, nbytes // max(t.element_size(), 1))

    def _size(self, func, t: torch.Tensor, entries: int) -> None:
        B, H = self.heads
        flat = (B * H, B * H * self.tokens) if self.tokens else (B * H,)
        # (a leading axis of B * H * n with tokens: heads and chunks flattened, a chunked scan's (B*H*chunks, c, c))
        lead = tuple(t.shape[:2]) == (B, H) or (t.dim() > 0 and (t.shape[0] in flat or bool(self.tokens) and
                                                                  t.shape[0] % (B * H) == 0))
        per_head = entries // (B * H) if t.dim() >= 3 and lead else entries
        over = self.limit is not None and per_head >= self.limit
        if not over and self.biggest is not None and entries <= self.biggest.entries:
            return
        alloc = Allocation(_op_name(func), tuple(t.shape), str(t.dtype).replace("torch.", ""), entries, per_head,
                           self.user_line())
        if self.biggest is None or entries > self.biggest.entries:
            self.biggest = alloc
        if over and self.too_big is None:
            self.too_big = alloc
            if self.stop:
                raise TensorTooLarge(alloc, self.limit)

    def _free(self, key: int) -> None:
        self.now -= self.live.pop(key, 0)
        self._refs.pop(key, None)

    def user_line(self) -> int | None:
        from attn_drill.judge.trace import user_line

        return user_line(self.user_file, depth=2)


def _key(t: torch.Tensor) -> int | None:
    try:
        return t.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError, AttributeError):
        return None  # sparse, nested, or a wrapper with no storage of its own


def _tensors(obj) -> list[torch.Tensor]:
    """The tensors in an op's arguments or result: a tensor, or a (nested) tuple or list of them, or a dict."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        obj = list(obj.values())
    if not isinstance(obj, (tuple, list)):
        return []
    out = []
    for x in obj:
        if isinstance(x, torch.Tensor):
            out.append(x)
        elif isinstance(x, (tuple, list, dict)):
            out += _tensors(x)
    return out


def _op_name(func) -> str:
    name = str(func)  # e.g. "aten.bmm.default"
    return name[: -len(".default")] if name.endswith(".default") else name


def mib(nbytes: int) -> str:
    return f"{nbytes / 2 ** 20:.1f} MiB"
