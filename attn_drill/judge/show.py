"""Every head's attention weights on one seeded example, the user's beside the reference's: `attn-drill show`.

Runs in the worker (worker.run_task, job "task": "maps"), never in the CLI process. What comes back is plain
JSON, drawn on the CLI side (attn_drill/practice/show.py, render/show.py, render/png.py), which never imports
torch:

    {"exercise", "case": "B=2 H=3 ...", "batch": 0, "how": "the weights forward returns",
     "maps": [{"name": "self_attn", "yours": [H x [Tq x [Tk numbers]]] or None, "reference": [...],
               "note": "..."}]}

or {"verdict": {"slug", "title", "evidence", "line"}} when the user's code cannot be run on the example (it does
not load, lacks the name, raises, returns something else), or {"error": why, "usage": true} for an exercise
that has no attention weights to draw. NaN goes out as None.

How the weights are found is the spec's `maps` attribute (specs/base.py), so a new exercise opts in with one line
(a module exercise that sets none is looked at through "sublayers"):

- "returned": the output the spec names "weights" (sdpa, mha, mha-fused, gqa, and any module returning
  (out, weights)); 3-D weights, or weights whose axes (spec.axes) have no head: (B, T, T) of one head, H = 1.
- "sublayers": a forward hook on every submodule; each one that returns (out, weights) with 4-D weights is one
  map, titled by its name (`self_attn`, `cross_attn` in a Transformer layer; the module itself by its class).
  The reference module gets the same hooks, and maps are paired by name.
- "values": the exercise returns no weights (flash, kv-cache). Its values are made one-hot per key position, so
  its output IS the weight matrix: out = W @ V with V = I (padded with zero columns, Tk <= d) is W. flash is
  called with v = that identity; in kv-cache hooks make W_v's output one-hot by each token's position and W_o
  the identity, so the merged heads come out as they are. This needs no tensor of probabilities to exist at all
  (flash never holds one: that is the point of it), and it works whatever the softmax is written with (torch's,
  exp and sum, an online one). The reference gets the same treatment, and for it this is exactly its softmax.
  What it shows of the user's code is the weights as its values path sees them: a mistake after the softmax that
  mixes positions (a wrong merge) gives rows that are not distributions, and the map says so.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from attn_drill.i18n import t
from attn_drill.judge import audit, calls, load
from attn_drill.judge.probes import generic as probes
from attn_drill.judge.specs import SPECS
from attn_drill.judge.specs.base import Case, grouped_layer_shapes, load_references, random_params, reference_module
from attn_drill.judge.trace import Tracer

MAX_T = 8  # the example's queries and keys, at most (a spec's first case this small is used as it is)
MAX_HEADS = 8  # heads drawn per map
SUM_TOL = 1e-3  # a row of weights read through the values sums to 1 within this, or the map says it does not


class Unusable(Exception):
    """The user's code cannot be run on the example: carries the finding that says why."""

    def __init__(self, finding):
        super().__init__(finding.title)
        self.finding = finding


def run(path: Path, exercise: str, seed: int) -> dict:
    """The maps of the user's file and the reference on one example, or why not (see the module's docstring)."""
    spec = SPECS.get(exercise)
    if spec is None or not how(spec):
        return {"error": _say("no_maps", exercise=exercise, drawable=drawable()), "usage": True}
    audit.arm(path, load_references())  # as for a check: the file's code may not reach into the checker
    try:
        module, bad = load.load(path, spec.id)
        if bad:
            raise Unusable(bad)
        target, bad = spec.resolve(module)
        if bad:
            raise Unusable(bad)
        gen = torch.Generator().manual_seed(seed)
        got = HOW[how(spec)](spec, target, path, gen)
    except Unusable as u:
        f = u.finding
        return {"verdict": {"slug": f.slug, "title": f.title, "evidence": f.evidence, "line": f.line}}
    return {"exercise": exercise, **got}


def how(spec) -> str | None:
    """The spec's `maps`; a module exercise that does not say is looked at through its sub-layers' hooks."""
    return getattr(spec, "maps", None) or ("sublayers" if hasattr(spec, "build") else None)


def drawable() -> str:
    return ", ".join(i for i, s in SPECS.items() if how(s))


def _say(key: str, /, **params) -> str:
    """This module's sentence `key` (i18n/<lang>/evidence/show.toml, [show])."""
    return t(f"evidence.show.show.{key}", **params)


def _and(items) -> str:
    """1 and 3 (two items; more join the same way)."""
    return _say("and").join(map(str, items))


def _user_call(path: Path, spec, fn):
    """Run fn (which calls the user's code) under the tracer, as a check would; an exception is the user's."""
    try:
        with Tracer(path, spec.forbidden), torch.no_grad():
            return fn()
    except Unusable:
        raise
    except BaseException as e:  # noqa: BLE001 - user code may raise anything
        raise Unusable(load.exception_finding(e, path, _say("while_running"))) from None


def pick_case(spec, gen) -> Case:
    """The spec's own example (spec.example), else the first of its cases with at most MAX_T queries and keys (else
    its first), with a mask if one does."""
    if hasattr(spec, "example"):
        return spec.example(gen)
    cases = spec.cases(gen)

    def size(c):
        d = c.dims
        return max(d.get("Tq", d.get("T", 0)), d.get("Tk", d.get("T", 0)))

    small = [c for c in cases if size(c) <= MAX_T] or cases[:1]
    return next((c for c in small if c.inputs.get("mask") is not None), small[0])


# -- "returned": the weights the code gives back ---------------------------------------------------------------
def returned(spec, target, path, gen) -> dict:
    case = pick_case(spec, gen)
    o = calls.run(spec, target, case, path)
    if o.error is not None:
        raise Unusable(load.exception_finding(o.error, path, _say("on_example", case=case.label)))
    if o.outputs is None:
        raise Unusable(probes.return_type(spec, o))
    ref = spec.unpack(spec.reference(case)[0])
    at = spec.outputs.index("weights")
    yours, want = o.outputs[at], ref[at]
    if want.dim() == 3 or "head" not in spec.axes.get("weights", ("head",)):  # one head's (B, Tq, Tk)
        yours, want = yours.unsqueeze(-3), want.unsqueeze(-3)  # (B, 1, Tq, Tk)
    item = pair("weights", yours, want)
    return {"case": case.label, "batch": 0, "how": _say("how_returned"), "maps": [item]}


# -- "sublayers": every submodule that returns (out, weights) ---------------------------------------------------
def sublayers(spec, target, path, gen) -> dict:
    case = pick_case(spec, gen)

    def yours():
        module, bad = spec.build(target, case, torch.float64)
        if bad:
            raise Unusable(bad)
        return hooked(module, spec.name, lambda: spec.call(target, case, module=module))

    mine = _user_call(path, spec, yours)
    module, _ = spec.build(getattr(reference_module(spec.file), spec.name), case, torch.float64)
    with torch.no_grad():
        ref = hooked(module, spec.name, lambda: spec.call(None, case, module=module))
    if not ref:  # the model answer has no module returning (out, weights): nothing to draw for this exercise
        return {"error": _say("no_maps", exercise=spec.id, drawable=drawable()), "usage": True}
    items = []
    for name, w in ref.items():
        if name in mine:
            items.append(pair(name, mine[name], w))
        else:
            items.append(pair(name, None, w, note=_say("no_pair", name=name)))
    return {"case": case.label, "batch": 0, "how": _say("how_sublayers"), "maps": items}


def hooked(module, root: str, call) -> dict:
    """{submodule name: the weights it returned} for each submodule (the module itself too, named `root`) that
    returned (out, weights) with 4-D weights, (B, H, Tq, Tk), in the order they ran; the first call of each."""
    seen: dict = {}

    def record(name):
        def hook(_mod, _inputs, output):
            if name not in seen and isinstance(output, (tuple, list)) and len(output) >= 2:
                w = output[1]
                if isinstance(w, torch.Tensor) and w.dim() == 4:
                    seen[name] = w.detach()
        return hook

    handles = [sub.register_forward_hook(record(name or root)) for name, sub in module.named_modules()]
    try:
        call()
    finally:
        for h in handles:
            h.remove()
    return seen


# -- "values": one-hot values, so the output is the weights -----------------------------------------------------
def flash_example(gen) -> dict:
    """q, k (B, H, Tq, d) and (B, H, Tk, d) random; v the (Tk, d) identity padded with zero columns."""
    B, H, Tq, Tk, d = 1, 2, 6, 8, 8
    q = torch.randn(B, H, Tq, d, generator=gen, dtype=torch.float64)
    k = torch.randn(B, H, Tk, d, generator=gen, dtype=torch.float64)
    v = torch.eye(Tk, d, dtype=torch.float64).expand(B, H, Tk, d)  # value j is the unit vector e_j
    return {"q": q, "k": k, "v": v, "causal": True, "block_size": 3,
            "label": _say("flash_case", sizes=f"B={B} H={H} Tq={Tq} Tk={Tk} d={d}", block_size=3)}


def flash(spec, target, path, gen) -> dict:
    x = flash_example(gen)
    Tk = x["k"].size(-2)

    def call(fn):
        q, k, v = (x[n].clone() for n in "qkv")
        return fn(q, k, v, causal=x["causal"], block_size=x["block_size"])

    out = _user_call(path, spec, lambda: call(target))
    ref = call(reference_module(spec.file).flash_attention)
    if not isinstance(out, torch.Tensor) or out.shape != ref.shape:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        slug = "wrong-output-shape" if isinstance(out, torch.Tensor) else "wrong-return-type"
        raise Unusable(_finding(slug, _say("flash_returned", got=got, want=tuple(ref.shape), case=x["label"]), spec))
    item = pair("weights", out[..., :Tk], ref[..., :Tk], values=out)
    return {"case": x["label"], "batch": 0, "maps": [item],
            "how": _say("how_flash")}


KV_STEPS = (4, 1, 3)  # a prefill, one token, a chunk: each call fed the cache the one before returned


def kv_example(gen) -> tuple[Case, str]:
    """The case (x (B, T, D), the weights by layer) and how to say it. T <= d: positions fit the one-hot width."""
    B, H, Hkv, d = 1, 4, 2, 8
    T = sum(KV_STEPS)
    config = {"d_model": H * d, "num_heads": H, "num_kv_heads": Hkv, "rope_base": 10000.0}
    dims = {"B": B, "H": H, "Hkv": Hkv, "d": d, "D": H * d, "T": T, "T_past": 0, "steps": KV_STEPS}
    x = torch.randn(B, T, H * d, generator=gen, dtype=torch.float64)
    case = Case("", {"x": x}, dims, config, random_params(gen, grouped_layer_shapes(config), False))
    label = _say("steps_case", sizes=f"B={B} H={H} Hkv={Hkv} d={d}", first=KV_STEPS[0], rest=_and(KV_STEPS[1:]))
    return case, label


def kv_cache(spec, target, path, gen) -> dict:
    case, label = kv_example(gen)
    x, H, Hkv, d, T = case.inputs["x"], *(case.dims[n] for n in ("H", "Hkv", "d", "T"))

    def yours():
        module, bad = spec.build(target, case, torch.float64)
        if bad:
            raise Unusable(bad)
        return _kv_steps(module, x, H, Hkv, d, spec)

    mine, ran = _user_call(path, spec, yours)
    module, _ = spec.build(getattr(reference_module(spec.file), spec.name), case, torch.float64)
    with torch.no_grad():
        ref, _ = _kv_steps(module, x, H, Hkv, d, spec)
    how = _say("how_kv")
    if "W_v" not in ran:  # F.linear(x, self.W_v.weight): no hook sees it, so the values stay as they are
        item = pair("weights", None, ref[..., :T], note=_say("kv_no_layer"))
    else:
        item = pair("weights", mine[..., :T], ref[..., :T], values=mine)
    return {"case": label, "batch": 0, "maps": [item], "how": how}


def _kv_steps(module, x, H: int, Hkv: int, d: int, spec) -> tuple[torch.Tensor, set]:
    """Feed x in KV_STEPS with the values one-hot: the weights of every call's queries, (B, H, T, d), and the
    names of the hooked layers that ran."""
    B, T, D = x.shape
    onehot = torch.eye(T, d, dtype=x.dtype)  # (T, d): the value of the token at position p is e_p
    ran: set = set()

    def values(_mod, inputs, _out):  # (B, t, D) -> (B, t, Hkv * d): each token's one-hot, in every kv head
        tokens = inputs[0]
        pos = torch.cdist(tokens.reshape(-1, D).double(), x[0].double()).argmin(-1).reshape(tokens.shape[:2])
        ran.add("W_v")
        return onehot[pos].to(tokens.dtype).repeat(1, 1, Hkv)  # found by value: safe to call W_v twice

    def identity(_mod, inputs, _out):
        ran.add("W_o")
        return inputs[0]

    hooks = [module.W_v.register_forward_hook(values), module.W_o.register_forward_hook(identity)]
    outs, cache, start = [], None, 0
    try:
        for n in KV_STEPS:
            r = _kv_call(module, x[:, start:start + n].clone(), cache, spec)
            outs.append(r[0])
            cache, start = r[1], start + n
    finally:
        for h in hooks:
            h.remove()
    out = torch.cat(outs, dim=1)  # (B, T, D): merged heads, head h at features [h*d, (h+1)*d)
    return out.view(B, T, H, d).transpose(1, 2), ran  # (B, H, T, d): query i's weight on key j at [.., i, j]


def _kv_call(module, chunk, cache, spec):
    """One call, fed the cache the call before returned; its result, checked for the form the contract says."""
    r = module(chunk) if cache is None else module(chunk, cache=cache)
    if not (isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], torch.Tensor)):
        raise Unusable(_finding("wrong-return-type", _say("call_returned", type=type(r).__name__), spec))
    if r[0].shape != chunk.shape:
        raise Unusable(_finding("wrong-output-shape", _say("out_shape", got=tuple(r[0].shape),
                                                           want=tuple(chunk.shape)), spec))
    return r


def _finding(slug: str, evidence: str, spec):
    from attn_drill import findings

    return findings.make(slug, evidence, score=1.0, name=spec.name, expected=spec.expected_return(), what="out")


def llama(spec, target, path, gen) -> dict:
    """The block's attention: W_v's output one-hot by token in every kv head, and W_o's input (the merged heads)
    read by a hook, so the residual and the feed-forward around it do not matter."""
    from attn_drill.judge.specs.llama_block import block_params

    B, H, Hkv, d, T = 1, 4, 2, 8, 6  # T <= d: every position has a one-hot value
    config = {"d_model": H * d, "num_heads": H, "num_kv_heads": Hkv, "d_ff": 24, "rope_base": 10000.0, "eps": 1e-6}
    positions = torch.tensor([0, 1, 3, 4, 8, 9])
    case = Case("", {"x": torch.randn(B, T, H * d, generator=gen, dtype=torch.float64), "positions": positions},
                {"B": B, "H": H, "Hkv": Hkv, "T": T, "d": d, "D": H * d}, config, block_params(gen, config))

    def heads_of(module):
        onehot, seen = torch.eye(T, d, dtype=torch.float64), {}

        def values(_mod, inputs, _out):  # (B, T, D) -> (B, T, Hkv * d): token t's value is e_t in every kv head
            seen["W_v"] = True
            return onehot[None].to(inputs[0].dtype).repeat(inputs[0].size(0), 1, Hkv)

        def merged(_mod, inputs):
            seen["W_o"] = inputs[0].detach().clone()

        hooks = [module.W_v.register_forward_hook(values), module.W_o.register_forward_pre_hook(merged)]
        try:
            module(case.inputs["x"].clone(), positions.clone())
        finally:
            for h in hooks:
                h.remove()
        y = seen.get("W_o")
        return (None if y is None or "W_v" not in seen else y.view(B, T, H, d).transpose(1, 2)), seen

    def yours():
        module, bad = spec.build(target, case, torch.float64)
        if bad:
            raise Unusable(bad)
        return heads_of(module)

    mine, _ = _user_call(path, spec, yours)
    module, _ = spec.build(getattr(reference_module(spec.file), spec.name), case, torch.float64)
    with torch.no_grad():
        ref, _ = heads_of(module)
    label = _say("llama_case", sizes=f"B={B} H={H} Hkv={Hkv} T={T} d={d}", positions=positions.tolist())
    how = _say("how_llama")
    if mine is None:
        item = pair("weights", None, ref[..., :T], note=_say("llama_no_layers"))
    else:
        item = pair("weights", mine[..., :T], ref[..., :T], values=mine)
    return {"case": label, "batch": 0, "maps": [item], "how": how}


def mla(spec, target, path, gen) -> dict:
    """The attention over a prefill and decode calls, each fed the cache the call before returned: W_kv_b's value
    rows solved so that every token's value is one-hot (v_t = e_t from the normalised latents, T <= kv_rank), and
    W_o the identity, so the output is the merged heads' weights. Only weights are set: it works for the naive
    form and the absorbed one alike."""
    from attn_drill.judge.specs.mla import mla_params
    from attn_drill.judge.variants import mla as variants_mla

    B, H, r, dn, dr, dv = 1, 4, 10, 4, 4, 8
    T, D = sum(KV_STEPS), H * dv  # T <= dv: every token has a one-hot value; W_o (D, H * dv) is the identity
    config = {"d_model": D, "num_heads": H, "kv_rank": r, "d_nope": dn, "d_rope": dr, "d_v": dv, "rope_base": 100.0}
    params = mla_params(gen, config)
    x = torch.randn(B, T, D, generator=gen, dtype=torch.float64)
    c = variants_mla.run(params, x, config, (T,))[1][0]  # (T, r): the normalised latents
    v_rows = torch.eye(dv, T, dtype=torch.float64) @ torch.linalg.pinv(c.T)  # (dv, r): v_t = e_t
    w = params["W_kv_b.weight"].view(H, dn + dv, r).clone()
    w[:, dn:] = v_rows
    params["W_kv_b.weight"], params["W_o.weight"] = w.view(H * (dn + dv), r), torch.eye(D, dtype=torch.float64)
    dims = {"B": B, "H": H, "r": r, "T": T, "T_past": 0, "steps": KV_STEPS}
    case = Case("", {"x": x, "z": torch.ones(B, 1, r, dtype=torch.float64)}, dims, config, params)

    def heads_of(module):
        outs, cache, start = [], None, 0
        for n in KV_STEPS:
            out, cache = _kv_call(module, x[:, start:start + n].clone(), cache, spec)
            outs.append(out)
            start += n
        return torch.cat(outs, dim=1).view(B, T, H, dv).transpose(1, 2)  # (B, H, T, dv): [.., i, j] = weight

    def yours():
        module, bad = spec.build(target, case, torch.float64)
        if bad:
            raise Unusable(bad)
        return heads_of(module)

    mine = _user_call(path, spec, yours)
    module, _ = spec.build(getattr(reference_module(spec.file), spec.name), case, torch.float64)
    with torch.no_grad():
        ref = heads_of(module)
    label = _say("steps_case", sizes=f"B={B} H={H} kv_rank={r} d_nope={dn} d_rope={dr} d_v={dv}",
                 first=KV_STEPS[0], rest=_and(KV_STEPS[1:]))
    how = _say("how_mla")
    return {"case": label, "batch": 0, "maps": [pair("weights", mine[..., :T], ref[..., :T], values=mine)],
            "how": how}


def paged(spec, target, path, gen) -> dict:
    """Each sequence's weights over its tokens, with the pool block each token came from: every pool slot's value
    is a one-hot of its own (d = the pool's slots), so the output is the weights over the pool's slots, read back
    through the sequence's table to its positions. Weight taken from slots its table never names is said."""
    from attn_drill.judge.specs.paged_attention import paged_case

    bs, lengths = 3, [5, 7]
    n_slots = (sum(-(-n // bs) for n in lengths) + 1) * bs
    case = paged_case(gen, 2, 1, n_slots, bs, lengths, 1)
    x = case.inputs
    x["v_cache"] = torch.eye(n_slots, dtype=torch.float64).view(x["v_cache"].shape)
    args = lambda: (x["q"].clone(), x["k_cache"].clone(), x["v_cache"].clone(), x["block_table"].clone(),  # noqa: E731
                    x["lengths"].clone())

    def yours():
        out = target(*args())
        if not isinstance(out, torch.Tensor) or out.shape != x["q"].shape:
            raise Unusable(_finding("wrong-return-type", _say("paged_returned", type=type(out).__name__), spec))
        return out.detach().double()

    mine = _user_call(path, spec, yours)
    ref = reference_module(spec.file).paged_attention(*args()).double()
    T = x["block_table"].size(1) * bs
    maps = []
    for b, n in enumerate(lengths):
        slots = [int(x["block_table"][b, t // bs]) * bs + t % bs for t in range(T)]
        per_token = lambda out: out[b][:, slots][:, None, :]  # noqa: E731  (H, 1, T): the query's row
        blocks = _say("list_sep").join(_say("paged_block", first=i, last=min(i + bs, T) - 1,
                                            block=int(x["block_table"][b, i // bs])) for i in range(0, T, bs))
        elsewhere = float(mine[b].sum(-1).mean() - per_token(mine).sum(-1).mean())
        note = _say("paged_note", blocks=blocks, n=n)
        if abs(elsewhere) > 1e-3:
            note += _say("paged_elsewhere", share=elsewhere)
        maps.append(pair(_say("paged_name", b=b, n=n), per_token(mine), per_token(ref), note=note))
    label = _say("paged_case", bs=bs, lengths=lengths, blocks=x["k_cache"].size(0))
    how_ = _say("how_paged")
    return {"case": label, "batch": 0, "maps": maps, "how": how_}


VALUES = {"flash": flash, "kv-cache": kv_cache, "llama-block": llama, "mla": mla, "paged-attention": paged}


def values(spec, target, path, gen) -> dict:
    return VALUES[spec.id](spec, target, path, gen)


HOW = {"returned": returned, "sublayers": sublayers, "values": values}


# -- plain numbers ----------------------------------------------------------------------------------------------
def heads(w: torch.Tensor) -> torch.Tensor:
    """Batch element 0's weights, (H, Tq, Tk), whatever leading dims they have."""
    w = w.detach().double().cpu()
    while w.dim() > 4:
        w = w[0]
    if w.dim() == 4:
        w = w[0]
    while w.dim() < 3:
        w = w[None]
    return w


def numbers(w: torch.Tensor) -> list:
    return [[[None if not math.isfinite(v) else round(v, 4) for v in row] for row in head.tolist()] for head in w]


def pair(name: str, yours, ref, note: str = "", values=None) -> dict:
    """One map: the user's heads and the reference's as nested lists (the first MAX_HEADS), and a note when they
    cannot be compared or not every head is drawn."""
    r = heads(ref)
    more = _say("heads_drawn", shown=MAX_HEADS, all=r.size(0)) if r.size(0) > MAX_HEADS else ""
    item = {"name": name, "yours": None, "reference": numbers(r[:MAX_HEADS]), "note": note or more}
    if yours is None:
        return item
    y = heads(yours)
    if y.shape != r.shape:
        item["note"] = _say("not_by_head", yours=tuple(yours.shape), ref=tuple(ref.shape))
        return item
    item["yours"] = numbers(y[:MAX_HEADS])
    if values is not None:
        item["note"] = _say("note_sep").join(filter(None, [not_weights(heads(values), r.size(-1)), more]))
    return item


def not_weights(v: torch.Tensor, Tk: int) -> str:
    """Why output read through one-hot values is not a set of weights ("" when it is): rows of weights are >= 0,
    sum to 1 over the Tk keys and put nothing beyond them (a row with no visible key may be all zeros)."""
    v = torch.nan_to_num(v, nan=-1.0)
    w, rest = v[..., :Tk], v[..., Tk:]
    sums = w.sum(-1)
    bad = (w < -SUM_TOL).any(-1) | ((sums - 1).abs() > SUM_TOL) & (sums.abs() > SUM_TOL)
    if rest.numel():
        bad |= rest.abs().amax(-1) > SUM_TOL
    if not bad.any():
        return ""
    return _say("not_weights", bad=int(bad.sum()), rows=bad.numel())
