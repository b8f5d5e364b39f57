"""Watch what the user's code actually runs: forbidden built-ins, tensors made on the wrong device,
the user's line for each torch call, and changes to torch itself.

Everything here is found from behaviour (torch's function mode sees every torch call, torch.ops included),
never from the source text. (A dispatch mode would see more, but its first use imports torch._dynamo: 1.5 s.)

It also sees the checker's own code doing torch ops while the user's code runs: a function of attn_drill (or
of the reference) called from the user's code, found on the stack between the op and the user's frame. That
is the user's code computing with the checker's (its variants, its specs, its reference: the expected answer),
and it is stopped on the spot (audit.CheckerReached) and reported as `checker-reached`. The checker's own
hooks and modes that legitimately run inside a user call (HOOKS below) are not counted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from attn_drill.i18n import t
from attn_drill.judge import audit

# Functions that do the exercise, by the name torch's function mode sees (python functions, and torch.ops)
FORBIDDEN = {
    "scaled_dot_product": "torch.nn.functional.scaled_dot_product_attention",
    "multi_head_attention_forward": "nn.MultiheadAttention (F.multi_head_attention_forward)",
    "_native_multi_head_attention": "nn.MultiheadAttention",
}
# Functions that make a tensor on the default device unless told otherwise (the *_like ones follow their input)
FACTORIES = {"ones", "zeros", "full", "empty", "arange", "eye", "rand", "randn", "tensor", "as_tensor",
             "scalar_tensor", "linspace", "randint", "tril_indices", "triu_indices"}
MOVES = {"to", "cuda", "type_as", "to_dense"}
LOWER = (torch.float32, torch.float16, torch.bfloat16)  # below float64: precision-loss when the inputs are float64  # a tensor moved afterwards is fine
# the checker's code that runs inside a user call on its own account: modes, hooks (module, function name)
HOOK_MODULES = frozenset({"attn_drill.judge.trace", "attn_drill.judge.memory", "attn_drill.judge.audit"})
HOOKS = frozenset({("attn_drill.judge.specs.masks", "ReadsOnMeta.__torch_function__"),
                   ("attn_drill.judge.probes.cache", "JoinWatch.__torch_function__"),
                   ("attn_drill.judge.probes.modules", "_record.<locals>.hook"),
                   ("attn_drill.judge.show", "hooked.<locals>.record.<locals>.hook"),  # attn-drill show's hooks
                   ("attn_drill.judge.show", "_kv_steps.<locals>.values"),
                   ("attn_drill.judge.show", "_kv_steps.<locals>.identity"),
                   ("attn_drill.judge.show", "llama.<locals>.heads_of.<locals>.values"),
                   ("attn_drill.judge.show", "llama.<locals>.heads_of.<locals>.merged")})


class Tracer(TorchFunctionMode):
    """Records, for one user call: forbidden calls, the user's line for each torch function, and tensors
    the user's code made on the default device (a factory with no device=, never moved afterwards):
    on a GPU those meet the CUDA inputs and raise."""

    def __init__(self, user_file: Path, forbidden: dict | None = None, record=None):
        super().__init__()
        self.user_file = str(user_file.resolve())
        self.forbidden = FORBIDDEN if forbidden is None else forbidden
        # record(line, name, args, kwargs, out), called after each call made from the user's file: explain.py
        # keeps each call's output shape with its line (None for a check: nothing more is kept)
        self.record = record
        # the lines further out on the stack in the user's file (the calls of a helper), kept for a record that asks
        # for them (`wants_sites`): the localiser's, to name the call of a helper that went wrong for that call only
        self._sites = bool(getattr(record, "wants_sites", False))
        self.sites: tuple[int, ...] = ()
        self.forbidden_calls: list[tuple[str, int | None]] = []
        self.calls: list[tuple[str, int | None]] = []  # (function name, user line)
        self.precision = None  # the inputs' dtype, when it is float64: a lower one made from the user's file is kept
        self.lowered: tuple[str, int, str] | None = None  # (function, user line, dtype) of the first such tensor
        # tensors made on the default device by a factory with no device= (and, with `follow`, what is made of
        # them): id(tensor) -> (the factories' (name, user line) it comes from, the tensor, kept so its id holds)
        self._made: dict[int, tuple[frozenset, torch.Tensor]] = {}
        self._factories: dict[tuple[str, int], None] = {}  # each such factory call, in order
        self._moved: set[tuple[str, int]] = set()  # those moved to another device, or made into a tensor moved
        self.follow = False  # follow what is made from such a tensor: calls.run sets it for a run off the CPU
        self.moves_named = False  # on the CPU: .to(x.device), .to(x), .cuda(), .type_as(x) count as moves
        self._globals = None  # the user module's namespace, once a frame of the user's file has shown it
        self._walker = _walker(self)
        next(self._walker)
        self._walker.send(self._walker.gi_frame)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = _name(func)
        line, checker = self._walker.send(None)
        if checker is not None and line is not None:
            what = t("evidence.show.trace.checker_code", checker=checker)
            audit.HITS.append(("checker-reached", what, line))
            raise audit.CheckerReached(t("evidence.show.trace.stopped", what=what))
        self.calls.append((name, line))
        for key, what in self.forbidden.items():
            if (name == key[1:] if key.startswith("=") else key in name):  # "=grad": that exact name only
                self.forbidden_calls.append((what, line))
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if name in FACTORIES and line is not None and kwargs.get("device") is None:
            if isinstance(out, torch.Tensor) and out.dim() > 0:
                self._factories.setdefault((name, line))
                self._made[id(out)] = (frozenset({(name, line)}), out)
        elif self._made and args:
            self._follow(name, args, kwargs, out)
        if self.precision is not None and self.lowered is None and line is not None and isinstance(out, torch.Tensor) \
                and out.is_floating_point() and out.dtype in LOWER and _reads_float64(args):
            self.lowered = (name, line, str(out.dtype).replace("torch.", ""))
        if self.record is not None and line is not None:
            if self._sites:
                self.record(line, name, args, kwargs, out, sites=self.sites)
            else:
                self.record(line, name, args, kwargs, out)
        return out

    def _follow(self, name: str, args, kwargs: dict, out) -> None:
        """A tensor made from factories' tensors (slopes from an arange, then cat, then .to(q); cos from the outer
        product of two aranges) carries their origins: when it is moved to another device, so are they. With
        `moves_named` (a run on the CPU, where nothing moves), a move asked for counts as one."""
        if name in READS:  # its numbers read into Python (.tolist(), int()): that works from any device
            self._moved |= self._origins(args[:1])
        elif not isinstance(out, torch.Tensor):
            return
        elif name in MOVES and isinstance(args[0], torch.Tensor) and (
                out.device != args[0].device or (self.moves_named and _names_a_device(name, args, kwargs))):
            self._moved |= self._origins(args[:1])
        elif self.follow and out.device.type == "cpu" and out.dim() > 0:
            origins = self._origins(args)
            if origins:
                self._made[id(out)] = (origins, out)

    def _origins(self, args) -> frozenset:
        found = frozenset()
        for a in args:
            for x in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(x, torch.Tensor) and id(x) in self._made:
                    found |= self._made[id(x)][0]
        return found

    def adopt(self, build: "Tracer", module, device: str) -> None:
        """Take over what `build` (the tracer of the module's construction) saw made on the default device and kept
        as a plain attribute of the module: unlike parameters and buffers, module.to(device) never moves those."""
        for m in module.modules():
            for value in vars(m).values():
                if isinstance(value, torch.Tensor) and value.device.type != device and id(value) in build._made:
                    origins, _ = build._made[id(value)]
                    self._made[id(value)] = (origins, value)
                    for key in sorted(origins, key=lambda k: k[1]):
                        self._factories.setdefault(key)

    @property
    def off_device(self) -> list[tuple[str, int]]:
        """(factory, user line) of each tensor made on the default device and never moved, nor anything made
        from it."""
        return [key for key in self._factories if key not in self._moved]

    def user_line(self) -> int | None:
        return user_line(self.user_file, depth=3)

    def locate(self, frame) -> tuple[int | None, str | None]:
        """(the user's line on the stack from `frame` outwards, the checker's function between it and `frame`, if
        any). Frames are told apart by their namespace (reading a frame's code is an audited event, and so costs
        a call of the audit hook): the user's own, once known, or a module of attn_drill's."""
        checker = None
        while frame is not None:
            g = frame.f_globals
            if (g is self._globals or self._globals is None) and frame.f_code.co_filename == self.user_file:
                self._globals = g
                if self._sites:
                    self.sites = self._outer(frame.f_back)
                return frame.f_lineno, checker
            if checker is None and g is not self._globals:
                module = g.get("__name__")
                if _checker(module) and module not in HOOK_MODULES and (
                        module, frame.f_code.co_qualname) not in HOOKS:
                    checker = f"{module.replace('attn_drill_reference_', 'the reference ')}.{frame.f_code.co_qualname}"
            frame = frame.f_back
        return None, None

    def _outer(self, frame) -> tuple[int, ...]:
        """The lines of the user's frames from `frame` outwards (innermost first): the calls that led to a call."""
        out = []
        while frame is not None:
            if frame.f_globals is self._globals and frame.f_code.co_filename == self.user_file:
                out.append(frame.f_lineno)
            frame = frame.f_back
        return tuple(out)

    def lines(self, names: set[str]) -> list[int]:
        """The user's lines of the calls named `names`, in the order they ran (a line once per call)."""
        return [line for name, line in self.calls if name in names and line is not None]

    def first_line(self, names: set[str], last: bool = False) -> int | None:
        hits = self.lines(names)
        return (hits[-1] if last else hits[0]) if hits else None


READS = frozenset({"tolist", "item", "numpy", "__int__", "__float__", "__bool__", "__index__", "__len__",
                   "__iter__"})


def _names_a_device(name: str, args, kwargs: dict) -> bool:
    """A move that says where to: .cuda(), .type_as(x), or .to() given a device or a tensor (x.device, x); a device
    written as text counts unless it is the CPU's ("cpu" says where it goes: not to the inputs)."""
    if name in ("cuda", "type_as"):
        return True
    where = [kwargs.get("device"), *args[1:]]
    return any(isinstance(a, (torch.Tensor, torch.device)) or (isinstance(a, str) and not a.startswith("cpu"))
               for a in where)


def _walker(tracer):
    """Hands the tracer the frames of each torch call. Its own frame is sent in once; while it runs, that frame's
    f_back is whoever resumed it (the tracer's __torch_function__), so no sys._getframe per op: that is an
    audited call, and with attn-drill's audit hook in place (audit.py) a slow one."""
    me = yield
    answer = None
    while True:
        yield answer
        try:
            answer = tracer.locate(me.f_back.f_back)
        except Exception:  # noqa: BLE001 - a frame gone odd: no line, no blame
            answer = (None, None)


def _reads_float64(args) -> bool:
    """A float64 tensor among a call's arguments (one level of lists): the call brought float64 data down."""
    for a in args:
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(x, torch.Tensor) and x.dtype == torch.float64:
                return True
    return False


def _checker(module) -> bool:
    return isinstance(module, str) and (module == "attn_drill" or module.startswith(("attn_drill.",
                                                                                      "attn_drill_reference_")))


def _name(func) -> str:
    opname = getattr(func, "_opname", None)  # torch.ops.aten._softmax.default: "_softmax", not "default"
    if isinstance(opname, str):
        return opname
    name = getattr(func, "__name__", None) or str(func)
    return name.rsplit(".", 1)[-1]


def user_line(user_file: str | None, depth: int = 2) -> int | None:
    """The line of the user's file on the stack, innermost first, from `depth` frames above this function."""
    frame = sys._getframe(depth) if user_file else None
    while frame is not None:
        if frame.f_code.co_filename == user_file:
            return frame.f_lineno
        frame = frame.f_back
    return None
