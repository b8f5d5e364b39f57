"""Blind batch b44, part 1: check every file against the model answer, without the checker.

Run from the repo root:  .venv/bin/python tests/blind44/harness_part1.py

For each file of its four exercises listed in MANIFEST.tsv:
  - an ok file must agree with reference/<file>.py within 1e-8 on every float64 case;
  - a wrong file must run without raising on every case and differ on at least one;
  - a wrong file with its `# MISTAKE` line replaced by the fix below must agree again
    (so the mistake really sits on that one line);
  - the manifest's line number must be the only line containing MISTAKE.
Every file is also run once in float32 to see that it keeps the dtype.
"""

import csv
import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ATOL = 1e-8

REF_FILE = {"sdpa": "sdpa", "mha": "mha", "gqa": "gqa", "sliding-window": "sliding_window"}

# the single line that fixes each wrong file (indentation included)
FIXES = {
    "mask-ignored__blind_b44_fill_not_assigned.py":
        '        scores = scores.masked_fill(mask == 0, float("-inf"))',
    "softmax-wrong-dim__blind_b44_dim_minus2.py":
        "    att = F.softmax(att, dim=-1)",
    "wrong-scale__blind_b44_divide_by_d.py":
        "    attn_logits = attn_logits / math.sqrt(d_k)",
    "wrong-head-split__blind_b44_reshape_no_transpose.py":
        "        return x.reshape(batch_size, seq_len, self.num_heads, self.d_k).transpose(1, 2)",
    "wrong-scale__blind_b44_sqrt_dmodel.py":
        "        self.scale = 1.0 / math.sqrt(d_model // num_heads)",
    "mask-after-softmax__blind_b44_multiply_probs.py":
        '            weights = F.softmax(logits.masked_fill(~keep, float("-inf")), dim=-1)',
    "kv-repeat-order__blind_b44_repeat_tiles.py":
        "    return x.repeat_interleave(n_rep, dim=1)",
    "wrong-head-merge__blind_b44_view_no_transpose.py":
        "        out = out.transpose(1, 2).contiguous().view(B, T, D)",
    "mask-inverted__blind_b44_fill_where_true.py":
        "            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
    "window-off-by-one__blind_b44_ge_lower_edge.py":
        "    allowed = (kpos <= qpos) & (kpos > qpos - window)",
    "causal-misaligned__blind_b44_query_index.py":
        "    i = torch.arange(Tk - Tq, Tk, device=device).view(-1, 1)",
    "sink-misapplied__blind_b44_exp_unshifted.py":
        "        denom = denom + torch.exp(sinks.view(1, H, 1, 1) - row_max)",
}

_n = 0


def load_source(src, tag):
    global _n
    _n += 1
    name = f"_b44_{tag}_{_n}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, f"<{tag}>", "exec"), mod.__dict__)
    return mod


def load_path(path, tag):
    return load_source(Path(path).read_text(), tag)


# ----------------------------------------------------------------------------- cases

def rand_mask(g, shape):
    """Random bool mask; every row (last axis) keeps at least one visible key."""
    m = torch.rand(shape, generator=g) < 0.6
    idx = torch.randint(0, shape[-1], shape[:-1] + (1,), generator=g)
    return m.scatter(-1, idx, True)


def causal(tq, tk):
    i = torch.arange(tq)[:, None] + (tk - tq)
    j = torch.arange(tk)[None, :]
    return j <= i


def padding(g, B, tk):
    lengths = torch.randint(1, tk + 1, (B,), generator=g)
    lengths[0] = tk
    return (torch.arange(tk)[None, :] < lengths[:, None])[:, None, :]  # (B, 1, Tk)


def sdpa_cases(dtype):
    g = torch.Generator().manual_seed(44)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    return [
        ("4d Tq5 Tk7 d8 dv6 random mask", (r(2, 3, 5, 8), r(2, 3, 7, 8), r(2, 3, 7, 6), rand_mask(g, (2, 3, 5, 7)))),
        ("3d T6 no mask", (r(4, 6, 8), r(4, 6, 8), r(4, 6, 5), None)),
        ("4d Tq6 Tk9 causal (Tq,Tk) mask", (r(2, 2, 6, 4), r(2, 2, 9, 4), r(2, 2, 9, 4), causal(6, 9))),
        ("3d Tq5 Tk8 padding (B,1,Tk)", (r(3, 5, 16), r(3, 8, 16), r(3, 8, 16), padding(g, 3, 8))),
        ("5d Tq4 Tk4 causal, big scores", (3 * r(2, 2, 2, 4, 32), 3 * r(2, 2, 2, 4, 32), r(2, 2, 2, 4, 8), causal(4, 4))),
    ]


def sw_cases(dtype):
    g = torch.Generator().manual_seed(4444)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    out = []
    for (B, H, Tq, Tk, d, window, with_sinks) in [
        (2, 3, 10, 10, 8, 3, False),
        (2, 3, 10, 10, 8, 3, True),
        (2, 3, 4, 11, 8, 4, True),
        (1, 2, 5, 9, 16, 1, False),
        (2, 2, 1, 8, 8, 5, True),
        (1, 4, 6, 12, 4, 2, False),
        (2, 2, 7, 7, 8, 1, True),
    ]:
        sinks = 2.0 * r(H) if with_sinks else None
        name = f"B{B} H{H} Tq{Tq} Tk{Tk} d{d} w{window} sinks={with_sinks}"
        out.append((name, (r(B, H, Tq, d), r(B, H, Tk, d), r(B, H, Tk, d), window, sinks)))
    return out


def mha_cases(dtype):
    g = torch.Generator().manual_seed(4400)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    cases = []
    # (ctor args, B, Tq, Tk, mask kind)
    for (D, H, bias), B, Tq, Tk, kind in [
        ((16, 4, True), 2, 6, 6, None),
        ((16, 4, True), 3, 5, 7, "random"),
        ((16, 4, False), 2, 4, 9, "padding"),
        ((24, 3, True), 2, 7, 7, "causal"),
        ((32, 8, True), 8, 5, 5, "random"),
    ]:
        if kind is None:
            mask = None
        elif kind == "random":
            mask = rand_mask(g, (B, Tq, Tk))
        elif kind == "padding":
            mask = padding(g, B, Tk)
        else:
            mask = causal(Tq, Tk).expand(B, Tq, Tk)
        name = f"D{D} H{H} bias={bias} B{B} Tq{Tq} Tk{Tk} mask={kind}"
        cases.append((name, (D, H, bias), (r(B, Tq, D), r(B, Tk, D), r(B, Tk, D), mask)))
    return cases


def gqa_cases(dtype):
    g = torch.Generator().manual_seed(4401)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    cases = []
    for (D, H, Hkv, bias), B, T, kind in [
        ((24, 6, 2, False), 2, 7, None),
        ((24, 6, 3, False), 2, 8, "causal"),
        ((32, 8, 2, True), 3, 6, "padding"),
        ((16, 4, 1, False), 2, 5, "random"),
        ((16, 4, 4, False), 2, 6, "causal"),
        ((48, 12, 4, False), 2, 9, "random"),
    ]:
        if kind is None:
            mask = None
        elif kind == "random":
            mask = rand_mask(g, (B, T, T))
        elif kind == "padding":
            mask = padding(g, B, T)
        else:
            mask = causal(T, T).expand(B, T, T)
        name = f"D{D} H{H} Hkv{Hkv} bias={bias} B{B} T{T} mask={kind}"
        cases.append((name, (D, H, Hkv, bias), (r(B, T, D), mask)))
    return cases


# ----------------------------------------------------------------------------- running

def run_function(ex, mod, args):
    fn = mod.scaled_dot_product_attention if ex == "sdpa" else mod.sliding_window_attention
    return fn(*args)


def run_module(ex, ref_mod, user_mod, ctor, args, seed):
    cls_name = "MultiHeadAttention" if ex == "mha" else "GroupedQueryAttention"
    torch.manual_seed(seed)
    ref = getattr(ref_mod, cls_name)(*ctor)
    user = getattr(user_mod, cls_name)(*ctor)
    user.load_state_dict(ref.state_dict())  # strict: same parameter names and shapes
    dtype = args[0].dtype
    ref.to(dtype).eval()
    user.to(dtype).eval()
    with torch.no_grad():
        return ref(*args), user(*args)


def cases_for(ex, dtype):
    return {"sdpa": sdpa_cases, "sliding-window": sw_cases, "mha": mha_cases, "gqa": gqa_cases}[ex](dtype)


def compare(ref_out, got):
    """Returns (agree, max_abs_diff or a reason)."""
    if not isinstance(got, tuple) or len(got) != 2:
        return False, f"returned {type(got).__name__}"
    worst = 0.0
    for a, b in zip(ref_out, got):
        if a.shape != b.shape:
            return False, f"shape {tuple(b.shape)} != {tuple(a.shape)}"
        if a.dtype != b.dtype:
            return False, f"dtype {b.dtype} != {a.dtype}"
        if torch.isnan(b).any():
            return False, "NaN"
        worst = max(worst, (a - b).abs().max().item())
    return worst <= ATOL, worst


def evaluate(ex, ref_mod, user_mod, dtype=torch.float64):
    """Per case: (name, 'agree'|'differ'|'raised', detail)."""
    results = []
    for ci, case in enumerate(cases_for(ex, dtype)):
        try:
            if ex in ("sdpa", "sliding-window"):
                name, args = case
                ref_out = run_function(ex, ref_mod, args)
                clones = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
                got = run_function(ex, user_mod, clones)
            else:
                name, ctor, args = case
                ref_out, got = run_module(ex, ref_mod, user_mod, ctor, args, seed=1000 + ci)
        except Exception as e:  # noqa: BLE001
            results.append((case[0], "raised", f"{type(e).__name__}: {e}"))
            continue
        ok, detail = compare(ref_out, got)
        results.append((name, "agree" if ok else "differ", detail))
    return results


def fmt(detail):
    return f"{detail:.2e}" if isinstance(detail, float) else str(detail)


def main():
    rows = [r for r in csv.DictReader(open(HERE / "MANIFEST.tsv"), delimiter="\t") if r["exercise"] in REF_FILE]
    refs = {ex: load_path(ROOT / "reference" / f"{f}.py", f"ref_{f}") for ex, f in REF_FILE.items()}
    failures = []
    tally = {"ok_agree": 0, "ok_total": 0, "wrong_differ": 0, "wrong_total": 0, "fix_agree": 0}

    for row in rows:
        ex, fname, slug, mline = row["exercise"], row["file"], row["expected_slug"], row["mistake_line"]
        path = ROOT / row["path"]
        src = path.read_text()
        lines = src.splitlines()
        problems = []

        # the marker: exactly on the manifest's line, nowhere else
        marked = [i + 1 for i, l in enumerate(lines) if "MISTAKE" in l]
        if slug == "ok":
            if marked or mline != "-":
                problems.append(f"ok file has MISTAKE lines {marked} / manifest line {mline}")
        else:
            if marked != [int(mline)] or not lines[int(mline) - 1].rstrip().endswith("# MISTAKE"):
                problems.append(f"MISTAKE lines {marked}, manifest says {mline}")
            if slug in src:
                problems.append("slug appears in the file")

        # imports: torch, math, torch.nn.functional (and torch.nn) only
        for l in lines:
            s = l.strip()
            if s.startswith(("import ", "from ")):
                top = s.split()[1]
                if not (top == "math" or top == "torch" or top.startswith("torch.")):
                    problems.append(f"import of {top}")

        user = load_source(src, fname)
        res = evaluate(ex, refs[ex], user)
        n_agree = sum(1 for _, v, _ in res if v == "agree")
        n_differ = sum(1 for _, v, _ in res if v == "differ")
        n_raised = sum(1 for _, v, _ in res if v == "raised")

        # float32: the dtype is kept (a correct file also agrees loosely)
        res32 = evaluate(ex, refs[ex], user, dtype=torch.float32)
        bad_dtype = [d for _, v, d in res32 if isinstance(d, str) and d.startswith("dtype")]
        if bad_dtype:
            problems.append(f"float32: {bad_dtype[0]}")

        if slug == "ok":
            tally["ok_total"] += 1
            if n_agree == len(res):
                tally["ok_agree"] += 1
            else:
                problems.append("does not agree on every case")
        else:
            tally["wrong_total"] += 1
            if n_raised:
                problems.append(f"raised on {n_raised} case(s)")
            if n_differ and not n_raised:
                tally["wrong_differ"] += 1
            elif not n_differ:
                problems.append("never differs from the reference")
            # fix the one line: it must then agree everywhere
            fixed = list(lines)
            fixed[int(mline) - 1] = FIXES[fname]
            fres = evaluate(ex, refs[ex], load_source("\n".join(fixed) + "\n", fname + "_fixed"))
            if all(v == "agree" for _, v, _ in fres):
                tally["fix_agree"] += 1
            else:
                bad = [(n, v, fmt(d)) for n, v, d in fres if v != "agree"]
                problems.append(f"one-line fix does not agree: {bad[:2]}")

        status = "PASS" if not problems else "FAIL"
        print(f"[{status}] {ex:15s} {fname}: {n_agree} agree, {n_differ} differ, {n_raised} raised"
              f" of {len(res)} cases")
        for name, verdict, detail in res:
            print(f"        {verdict:6s} {fmt(detail):>10s}  {name}")
        for p in problems:
            print(f"        PROBLEM: {p}")
        if problems:
            failures.append(fname)

    print()
    print(f"correct files agreeing with the model answer on every case: {tally['ok_agree']}/{tally['ok_total']}")
    print(f"wrong files that run on every case and differ on at least one: "
          f"{tally['wrong_differ']}/{tally['wrong_total']}")
    print(f"wrong files that agree on every case once their MISTAKE line is fixed: "
          f"{tally['fix_agree']}/{tally['wrong_total']}")
    print("ALL AS INTENDED" if not failures else f"NOT AS INTENDED: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
