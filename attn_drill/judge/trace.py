"""Watch what the user's code actually runs: forbidden built-ins, tensors made on the wrong device,
the user's line for each torch call, and changes to torch itself.

Everything here is found from behaviour (torch's function mode sees every torch call, torch.ops included),
never from the source text. (A dispatch mode would see more, but its first use imports torch._dynamo: 1.5 s.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

# Functions that do the exercise, by the name torch's function mode sees (python functions, and torch.ops)
FORBIDDEN = {
    "scaled_dot_product": "torch.nn.functional.scaled_dot_product_attention",
    "multi_head_attention_forward": "nn.MultiheadAttention (F.multi_head_attention_forward)",
    "_native_multi_head_attention": "nn.MultiheadAttention",
}
# Functions that make a tensor on the default device unless told otherwise (the *_like ones follow their input)
FACTORIES = {"ones", "zeros", "full", "empty", "arange", "eye", "rand", "randn", "tensor", "as_tensor",
             "scalar_tensor", "linspace", "randint", "tril_indices", "triu_indices"}
MOVES = {"to", "cuda", "type_as", "to_dense"}  # a tensor moved afterwards is fine


class Tracer(TorchFunctionMode):
    """Records, for one user call: forbidden calls, the user's line for each torch function, and tensors
    the user's code made on the default device (a factory with no device=, never moved afterwards):
    on a GPU those meet the CUDA inputs and raise."""

    def __init__(self, user_file: Path, forbidden: dict | None = None):
        super().__init__()
        self.user_file = str(user_file.resolve())
        self.forbidden = FORBIDDEN if forbidden is None else forbidden
        self.forbidden_calls: list[tuple[str, int | None]] = []
        self.calls: list[tuple[str, int | None]] = []  # (function name, user line)
        self._made: dict[int, tuple[str, int]] = {}  # id(tensor) -> (factory, user line)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = _name(func)
        line = self.user_line()
        self.calls.append((name, line))
        for key, what in self.forbidden.items():
            if key in name:
                self.forbidden_calls.append((what, line))
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if name in FACTORIES and line is not None and kwargs.get("device") is None:
            if isinstance(out, torch.Tensor) and out.dim() > 0:
                self._made[id(out)] = (name, line, out)  # keep it alive so its id stays its own
        elif name in MOVES and args and id(args[0]) in self._made:
            del self._made[id(args[0])]
        return out

    @property
    def off_device(self) -> list[tuple[str, int]]:
        """(factory, user line) of each tensor made on the default device and never moved."""
        return [(name, line) for name, line, _ in self._made.values()]

    def user_line(self) -> int | None:
        return user_line(self.user_file, depth=3)

    def first_line(self, names: set[str], last: bool = False) -> int | None:
        hits = [line for name, line in self.calls if name in names and line is not None]
        return (hits[-1] if last else hits[0]) if hits else None


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
