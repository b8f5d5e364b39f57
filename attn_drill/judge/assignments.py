"""The Python numbers the user's lines compute and keep (`d = v.shape[-1]`, `scale = 1 / math.sqrt(d)`,
`self.scale = d ** -0.5` in a constructor): a torch call that multiplies by `scale` sees only the float, never where
it was made. The localiser asks which line made the number a wrong factor came from, and the whole number under it.

Found from behaviour: a line tracer on the user's own frames compares, after each line, the floats (and lists of
floats, and whole numbers) its frame holds (its locals, and the attributes of its `self`) with those before it;
one that appears or changes was made by the line that just ran, and one a function returns by its return
statement. The tracer also notes which line bound each object to a name, and what the user's code returned to its
caller, and where (a step left out of the result: `out = num` where the reference returns num / den). Only while
the localiser runs the user's code again on one case (a failing check).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

MAX_LINES = 50_000  # line events watched per run: a long loop keeps its first passes (the scale is made before)


@dataclass(frozen=True)
class Made:
    line: int  # the user's line that made it
    value: float | tuple | int  # a float, a list of them (as a tuple), or a whole number
    ops_before: int  # how many tensors the recorder had kept when it was made (its place among the torch calls)


class Assignments:
    """A context: while it is open, every float a frame of `path` comes to hold is kept (`made`), with its line.
    `ops` counts the torch calls recorded so far (the Recorder's list), to place each number among them."""

    def __init__(self, path: Path, ops: list):
        self.file = str(path.resolve())
        self.ops = ops
        self.made: list[Made] = []
        self.bound: list[tuple[int, int, int]] = []  # (line, id of an object a name came to hold there, ops before)
        self.returned: tuple[int, object] | None = None  # (line, value): the last return of a call from outside
        self._frames: dict = {}  # frame -> (the line it last ran, the floats it held then, ids its names held)
        self._events = 0
        self._old = None

    def __enter__(self) -> "Assignments":
        self._old = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(self._old)
        self._frames.clear()

    def _call(self, frame, event, arg):
        if frame.f_code.co_filename != self.file or self._events >= MAX_LINES:
            return None  # a frame of torch, of the checker, of Python: not watched line by line
        self._frames[frame] = (None, _floats(frame), _names(frame))
        return self._line

    def _line(self, frame, event, arg):
        if event not in ("line", "return"):
            return self._line
        self._events += 1
        last, before, names = self._frames.get(frame, (None, {}, {}))
        now, held = _floats(frame), _names(frame)
        if last is not None:
            for key, value in now.items():
                if key not in before or before[key] != value:
                    self.made.append(Made(last, value, len(self.ops)))
            self.bound += [(last, i, len(self.ops)) for key, i in held.items() if names.get(key) != i]
        returned = number(arg) if event == "return" else None  # `return [start ** i for i in range(n)]`
        if returned is not None:
            self.made.append(Made(frame.f_lineno, returned, len(self.ops)))
        if event == "return" and (frame.f_back is None or frame.f_back.f_code.co_filename != self.file):
            self.returned = (frame.f_lineno, arg)  # what the user's code hands back to its caller, and where
        self._frames[frame] = (frame.f_lineno, now, held)
        return self._line if self._events < MAX_LINES else None

    def returned_ids(self) -> set[int]:
        """id() of what the user's code last returned to its caller: the object, or each of the results it returns."""
        if self.returned is None:
            return set()
        value = self.returned[1]
        return {id(value)} | ({id(x) for x in value} if type(value) is tuple else set())

    def origin(self, value: float | tuple, before: int) -> int | None:
        """The line that last made `value` before the torch call that was the `before`-th recorded, else None."""
        k = self.place(value, before)
        return None if k is None else self.made[k].line

    def place(self, value: float | tuple | int, before: int) -> int | None:
        """Where in `made` the last `value` made before the `before`-th torch call is (of the same type: a 1 is
        no 1.0), else None."""
        return next((k for k in reversed(range(len(self.made))) if type(self.made[k].value) is type(value)
                     and self.made[k].value == value and self.made[k].ops_before <= before), None)

    def ints(self, before: int) -> list[tuple[int, Made]]:
        """(place in `made`, the number) for each whole number made before the torch call that was the
        `before`-th recorded (`d = v.shape[-1]`), in the order they were made."""
        return [(k, m) for k, m in enumerate(self.made) if type(m.value) is int and m.ops_before <= before]


MAX_LIST = 4096  # a list of floats longer than this is no scale or slope list


def number(x) -> float | tuple | None:
    """x as a number the localiser can look for: a float, or a list or tuple of floats (the ALiBi slopes before
    torch.tensor) as a tuple; None for anything else."""
    if type(x) is float:
        return x
    if type(x) in (list, tuple) and 0 < len(x) <= MAX_LIST and all(type(v) is float for v in x):
        return tuple(x)
    return None


def _names(frame) -> dict:
    """name -> id of what it holds, for a frame's locals (which line bound a tensor to a name)."""
    try:
        return {name: id(v) for name, v in frame.f_locals.items()}
    except Exception:  # noqa: BLE001 - unknown then
        return {}


def _kept(v) -> float | tuple | int | None:
    """v as a number a frame is watched for: a whole number as it is (not a bool), else number(v)."""
    return v if type(v) is int else number(v)


def _floats(frame) -> dict:
    """The numbers a frame holds (floats, lists of them, whole numbers): its locals, and its `self`'s attributes (a
    module keeps its scale there)."""
    try:
        local = dict(frame.f_locals)
    except Exception:  # noqa: BLE001 - the numbers are then unknown
        return {}
    out = {name: n for name, v in local.items() for n in [_kept(v)] if n is not None}
    try:
        attrs = object.__getattribute__(local["self"], "__dict__") if "self" in local else {}
        if isinstance(attrs, dict):
            out.update({("self", k): n for k, v in list(attrs.items()) for n in [_kept(v)] if n is not None})
    except Exception:  # noqa: BLE001 - a `self` with no __dict__ (slots), or one that refuses to be read
        pass
    return out
