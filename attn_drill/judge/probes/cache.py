"""Probes of a user's cached attention (kv-cache): how it joins its cache, how its cached keys are turned, and
which call of a case goes wrong first, with the user's own cache and with the reference's.

All from behaviour: traced calls (a torch function mode that sees the tensors passed), the numbers of the
returned cache, and calls re-run with chosen inputs. Never from the source text.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from attn_drill.judge.probes import rope as rope_fit
from attn_drill.judge import trace
from attn_drill.judge.variants import cache as variants_cache
from attn_drill.judge.compare import closeness

JOINS = {"cat": None, "concat": None, "concatenate": None, "hstack": 1, "vstack": 0, "row_stack": 0}  # None: dim=


class JoinWatch(TorchFunctionMode):
    """Records every join (torch.cat and friends) that takes one of the watched tensors, with its axis."""

    def __init__(self, watched: list[torch.Tensor], user_file: Path):
        super().__init__()
        self.watched, self.user_file = watched, str(user_file.resolve())
        self.joins: list[dict] = []  # {"name", "dim", "shapes", "line"}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = trace._name(func)
        if name in JOINS and args and isinstance(args[0], (list, tuple)):
            tensors = [t for t in args[0] if isinstance(t, torch.Tensor)]
            if tensors and any(self._watched(t) for t in tensors):
                dim = JOINS[name]
                if dim is None:
                    dim = kwargs.get("dim", kwargs.get("axis", args[1] if len(args) > 1 else 0))
                nd = tensors[0].dim()
                dim = dim % nd if isinstance(dim, int) and nd else dim
                self.joins.append({"name": name, "dim": dim, "shapes": [tuple(t.shape) for t in tensors],
                                   "line": trace.user_line(self.user_file, depth=2)})
        return func(*args, **kwargs)

    def _watched(self, t: torch.Tensor) -> bool:
        # the cache itself, or the same numbers seen through .to() / .contiguous() / .detach()
        return any(t is w or (t.shape == w.shape and t.data_ptr() == w.data_ptr()) for w in self.watched)


def cache_joins(check) -> tuple[list[dict], object]:
    """Run the user's first call of the case that starts from a given cache, watching how the cache is joined."""
    spec = check.spec
    case = next((c for c in check.cases if "k_past" in c.inputs), None)
    if case is None:
        return [], None
    x = case.cast(torch.float64)
    watch = JoinWatch([x["k_past"], x["v_past"]], check.path)
    try:
        module, bad = spec.build(check.target, case, torch.float64)
        if bad:
            return [], case
        with watch, torch.no_grad():
            module(x["x"][:, :case.dims["steps"][0]], cache=(x["k_past"], x["v_past"]))
    except BaseException:  # noqa: BLE001 - the join is recorded before it raises; the engine reports the exception
        pass
    return watch.joins, case


# --- the keys in the returned cache: turned by what, at what positions -----------------------------------

def key_rotation(o):
    """probes/rope.py's reading of the new keys the user's cache holds against the unrotated keys W_k x."""
    if o.outputs is None:
        return None
    case = o.case
    got = o.outputs[1].detach().double().cpu()[:, :, case.dims["T_past"]:]  # (B, Hkv, T, d): the new tokens
    raw = variants_cache.raw_keys(case.params, case.dims, case.inputs["x"])
    return rope_fit.fit_rotation(raw, got) if got.shape == raw.shape else None


def values_turned(check) -> bool:
    """The cached values of some case are the values W_v x turned in pairs (RoPE applied to v too)."""
    for o in check.outcomes:
        if o.outputs is None:
            continue
        case = o.case
        got = o.outputs[2].detach().double().cpu()[:, :, case.dims["T_past"]:]
        raw = variants_cache.raw_keys(case.params, case.dims, case.inputs["x"], name="W_v")
        if got.shape != raw.shape or closeness(got, raw) <= 1e-6:
            continue
        rot = rope_fit.fit_rotation(raw, got)
        return rot is not None and rot.is_rotation and rot.layout != "other"
    return False


def positions(case, restart: bool = False) -> torch.Tensor:
    """(T,) the position of each new token of a case: absolute, or counted from 0 again in every call."""
    if restart:
        return torch.cat([torch.arange(n) for n in case.dims["steps"]])
    return torch.arange(case.dims["T_past"], case.dims["T_past"] + case.dims["T"])


def turned_as(rot, case) -> list[int | None]:
    """For each new token, the position its cached key is turned as (None when no position fits)."""
    d, base = case.dims["d"], case.config["rope_base"]
    freq = rope_fit.frequencies(d, base)  # (d/2,)
    P = case.dims["T_past"] + case.dims["T"]
    want = torch.arange(P, dtype=torch.float64)[:, None] * freq  # (P, d/2)
    unit = torch.polar(torch.ones_like(rot.angles), rot.angles)  # (B, Hkv, T, d/2)
    angles = unit.sum(dim=(0, 1)).angle()  # (T, d/2): the angle all batches and kv heads agree on
    out = []
    for a in angles:
        err = rope_fit.wrap(a[None, :] - want).abs().amax(-1)  # (P,)
        out.append(int(err.argmin()) if float(err.min()) <= rope_fit.ANGLE_TOL else None)
    return out


# --- which call goes wrong first --------------------------------------------------------------------------

def calls_of(case):
    """(first token, tokens, cached before) of each call of a case."""
    start, past, out = 0, case.dims["T_past"], []
    for n in case.dims["steps"]:
        out.append((start, n, past))
        start, past = start + n, past + n
    return out


def same(a, b) -> bool:
    return a.shape == b.shape and closeness(a, b) <= 1e-4


def first_wrong_call(steps_user, steps_ref) -> tuple[int, bool, bool] | None:
    """(call index, out right, cache right) of the first call whose out or returned cache differs."""
    for i, (u, r) in enumerate(zip(steps_user, steps_ref)):
        out_ok = same(u[0], r[0])
        cache_ok = all(same(a, b) for a, b in zip(u[1], r[1]))
        if not (out_ok and cache_ok):
            return i, out_ok, cache_ok
    return None


def replay(check, case, steps_ref) -> list[bool] | None:
    """Each call of the user's module given the reference's cache before it: does its out match then?"""
    try:
        module, bad = check.spec.build(check.target, case, torch.float64)
        if bad:
            return None
        x = case.cast(torch.float64)
        cache = (x["k_past"], x["v_past"]) if "k_past" in x else None
        ok = []
        with torch.no_grad():
            for (start, n, _), r in zip(calls_of(case), steps_ref):
                chunk = x["x"][:, start:start + n]
                got = module(chunk) if cache is None else module(chunk, cache=cache)
                ok.append(isinstance(got, tuple) and isinstance(got[0], torch.Tensor) and same(got[0], r[0]))
                cache = r[1]
        return ok
    except BaseException:  # noqa: BLE001
        return None
