"""Blind batch b44, part 3: checks each corpus file against the model answer (no attn_drill involved).

Run from the repo root:  .venv/bin/python tests/blind44/harness_part3.py
Correct files must agree with reference/<file>.py within 1e-8 on every case; wrong files must run without
raising on every case and differ from the reference on at least one.
"""

import ast
import importlib.util
import math
import pathlib
import sys
import warnings

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOL = 1e-8
DIFF_MIN = 1e-6

EXERCISES = {
    "alibi": "alibi",
    "flash": "flash",
    "attention-backward": "attention_backward",
    "linear-attention": "linear_attention",
    "paged-attention": "paged_attention",
}

_count = 0


def load(path):
    global _count
    _count += 1
    spec = importlib.util.spec_from_file_location(f"_b44_mod_{_count}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rnd(*shape, g, scale=1.0):
    return torch.randn(*shape, generator=g, dtype=torch.float64) * scale


# ---------------------------------------------------------------- cases: each a (label, callable(mod) -> tensors)

def alibi_cases():
    g = torch.Generator().manual_seed(44)
    cases = []
    for H in (4, 6, 8, 12, 3):
        for (Tq, Tk) in ((7, 7), (3, 9), (1, 5), (5, 11)):
            for causal in (True, False):
                if not causal and Tq < 2:
                    continue
                B, d = 2, 8
                q, k, v = rnd(B, H, Tq, d, g=g), rnd(B, H, Tk, d, g=g), rnd(B, H, Tk, d, g=g)
                label = f"H={H} Tq={Tq} Tk={Tk} causal={causal}"
                cases.append((label, lambda m, q=q, k=k, v=v, c=causal, H=H:
                              (m.alibi_slopes(H).double(),) + tuple(m.alibi_attention(q, k, v, causal=c))))
    return cases


def flash_cases():
    g = torch.Generator().manual_seed(4401)
    cases = []
    for (Tq, Tk) in ((9, 9), (4, 13), (1, 10), (12, 7), (17, 17)):
        for causal in (False, True):
            if causal and Tq > Tk:
                continue
            for bs in (1, 3, 5, 64):
                B, H, d = 2, 3, 6
                # scores of varied size so the running max moves between blocks
                q, k, v = rnd(B, H, Tq, d, g=g, scale=2.0), rnd(B, H, Tk, d, g=g, scale=2.0), rnd(B, H, Tk, d, g=g)
                label = f"Tq={Tq} Tk={Tk} causal={causal} bs={bs}"
                cases.append((label, lambda m, q=q, k=k, v=v, c=causal, bs=bs:
                              (m.flash_attention(q, k, v, causal=c, block_size=bs),)))
    return cases


def _visible_mask(shape, Tq, Tk, g, kind):
    if kind == "causal":
        i = torch.arange(Tq)[:, None] + (Tk - Tq)
        j = torch.arange(Tk)[None, :]
        return (j <= i).expand(shape)
    m = torch.rand(shape, generator=g) > 0.4
    m[..., 0] = True  # every row keeps a visible key
    m[..., -1] = True
    return m


def backward_cases():
    g = torch.Generator().manual_seed(4402)
    cases = []
    configs = [
        ((2, 3), 6, 6, 5, 7),
        ((2, 3), 4, 9, 5, 3),
        ((3,), 8, 5, 4, 6),
        ((2, 2, 2), 7, 7, 3, 3),
        ((), 5, 8, 4, 2),
    ]
    for lead, Tq, Tk, d, dv in configs:
        for mk in (None, "causal", "random_full", "random_bcast"):
            if mk == "causal" and Tq > Tk:
                continue
            q, k = rnd(*lead, Tq, d, g=g), rnd(*lead, Tk, d, g=g)
            v, dout = rnd(*lead, Tk, dv, g=g), rnd(*lead, Tq, dv, g=g)
            if mk is None:
                mask = None
            elif mk == "causal":
                mask = _visible_mask((Tq, Tk), Tq, Tk, g, "causal")
            elif mk == "random_full":
                mask = _visible_mask(tuple(lead) + (Tq, Tk), Tq, Tk, g, "random")
            else:
                shape = tuple(lead[:-1]) + ((1,) if lead else ()) + (Tq, Tk)
                mask = _visible_mask(shape, Tq, Tk, g, "random")
            label = f"lead={lead} Tq={Tq} Tk={Tk} d={d} dv={dv} mask={mk}"
            cases.append((label, lambda m, q=q, k=k, v=v, dout=dout, mask=mask:
                          tuple(m.attention_backward(q, k, v, dout, mask))))
    return cases


def linear_cases():
    g = torch.Generator().manual_seed(4403)
    cases = []
    for (B, H, T, d, dv) in ((2, 3, 16, 3, 2), (1, 2, 30, 4, 3), (2, 2, 9, 2, 2)):
        for causal in (False, True):
            for eps in (1e-6, 0.5):
                q, k, v = rnd(B, H, T, d, g=g), rnd(B, H, T, d, g=g), rnd(B, H, T, dv, g=g)
                label = f"T={T} d={d} dv={dv} causal={causal} eps={eps}"
                cases.append((label, lambda m, q=q, k=k, v=v, c=causal, e=eps:
                              (m.linear_attention(q, k, v, causal=c, eps=e),)))
    return cases


def paged_case(g, B, H, Hkv, d, bs, lengths, max_blocks, spare=5, big=30.0):
    need = [(L + bs - 1) // bs for L in lengths]
    num_blocks = sum(need) + spare
    perm = torch.randperm(num_blocks, generator=g)
    k_cache = torch.full((num_blocks, bs, Hkv, d), big, dtype=torch.float64)
    v_cache = torch.full((num_blocks, bs, Hkv, d), -big, dtype=torch.float64)
    # spare / unowned slots: large values of random sign, so reading them moves the result
    k_cache += rnd(num_blocks, bs, Hkv, d, g=g, scale=big)
    v_cache += rnd(num_blocks, bs, Hkv, d, g=g, scale=big)
    table = torch.empty(B, max_blocks, dtype=torch.int64)
    used = 0
    for b, L in enumerate(lengths):
        own = perm[used:used + need[b]]
        used += need[b]
        for n in range(need[b]):
            lo = n * bs
            cnt = min(bs, L - lo)
            k_cache[own[n], :cnt] = rnd(cnt, Hkv, d, g=g)
            v_cache[own[n], :cnt] = rnd(cnt, Hkv, d, g=g)
        # spare entries of the table point at other (valid) pool blocks
        others = perm[torch.randint(0, num_blocks, (max_blocks,), generator=g)]
        table[b] = others
        table[b, :need[b]] = own
    q = rnd(B, H, d, g=g)
    return q, k_cache, v_cache, table, torch.tensor(lengths, dtype=torch.int64)


def paged_cases():
    g = torch.Generator().manual_seed(4404)
    cases = []
    configs = [
        (3, 8, 2, 4, 4, [5, 12, 1], 4),
        (4, 6, 3, 5, 3, [7, 3, 9, 6], 4),
        (2, 4, 4, 6, 8, [16, 9], 3),
        (3, 8, 1, 4, 2, [8, 3, 4], 5),
        (2, 8, 8, 4, 4, [4, 13], 4),
    ]
    for (B, H, Hkv, d, bs, lengths, max_blocks) in configs:
        q, kc, vc, table, lens = paged_case(g, B, H, Hkv, d, bs, lengths, max_blocks)
        label = f"B={B} H={H} Hkv={Hkv} bs={bs} lengths={lengths} max_blocks={max_blocks}"
        cases.append((label, lambda m, q=q, kc=kc, vc=vc, t=table, l=lens:
                      (m.paged_attention(q, kc, vc, t, l),)))
    return cases


CASES = {
    "alibi": alibi_cases,
    "flash": flash_cases,
    "attention-backward": backward_cases,
    "linear-attention": linear_cases,
    "paged-attention": paged_cases,
}


# ---------------------------------------------------------------- static checks on the source

ALLOWED_IMPORTS = {"torch", "math", "torch.nn.functional"}


def static_check(path, is_ok):
    problems = []
    src = path.read_text()
    lines = src.splitlines()
    marked = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith("# MISTAKE")]
    mentions = [i + 1 for i, line in enumerate(lines) if "MISTAKE" in line.upper()]
    if is_ok:
        if mentions:
            problems.append(f"ok file mentions MISTAKE on lines {mentions}")
    else:
        if len(marked) != 1:
            problems.append(f"expected exactly one '# MISTAKE' line, found {marked}")
        if set(mentions) != set(marked):
            problems.append(f"MISTAKE appears elsewhere: {sorted(set(mentions) - set(marked))}")
    # no other comments at all would be safest; report comments besides the marker
    for i, line in enumerate(lines, 1):
        if "#" in line and i not in marked:
            problems.append(f"comment on line {i}: {line.strip()}")
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names = {node.module}
        else:
            continue
        if not names <= ALLOWED_IMPORTS:
            problems.append(f"import outside torch/math/F: {names}")
    return problems, (marked[0] if len(marked) == 1 else None)


def max_diff(a, b):
    worst = 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return math.inf
        dd = (x.double() - y.double()).abs()
        if torch.isnan(dd).any():
            return math.inf
        worst = max(worst, dd.max().item() if dd.numel() else 0.0)
    return worst


def main():
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    results = []
    n_bad = 0
    for ex, fname in EXERCISES.items():
        ref = load(ROOT / "reference" / f"{fname}.py")
        cases = CASES[ex]()
        expected = []
        for label, fn in cases:
            expected.append(fn(ref))
        folder = ROOT / "tests" / "corpus" / ex
        for path in sorted(folder.glob("*__blind_b44_*.py")):
            slug = path.name.split("__")[0]
            is_ok = slug == "ok"
            problems, line = static_check(path, is_ok)
            mod = load(path)
            raised, diffs = [], []
            for (label, fn), exp in zip(cases, expected):
                try:
                    got = fn(mod)
                except Exception as e:  # noqa: BLE001
                    raised.append(f"{label}: {type(e).__name__}: {e}")
                    continue
                diffs.append((label, max_diff(got, exp)))
            worst = max((dd for _, dd in diffs), default=0.0)
            n_differ = sum(1 for _, dd in diffs if dd > DIFF_MIN)
            if is_ok:
                good = not raised and worst <= TOL
                verdict = "agrees" if good else "PROBLEM"
            else:
                good = not raised and n_differ > 0
                verdict = "differs" if good else "PROBLEM"
            good = good and not problems
            n_bad += not good
            results.append((ex, path.name, slug, line, verdict, worst, n_differ, len(cases), raised, problems))
            print(f"{'OK ' if good else 'BAD'} {ex:20s} {path.name:60s} {verdict:8s} "
                  f"max|diff|={worst:.3g} differing_cases={n_differ}/{len(cases)} mistake_line={line or '-'}")
            for r in raised[:3]:
                print(f"      raised: {r}")
            for p in problems:
                print(f"      static: {p}")
    n_ok = sum(1 for r in results if r[2] == "ok")
    ok_agree = sum(1 for r in results if r[2] == "ok" and r[4] == "agrees" and not r[9])
    n_wrong = len(results) - n_ok
    wrong_differ = sum(1 for r in results if r[2] != "ok" and r[4] == "differs" and not r[9])
    print(f"\nsummary: {ok_agree}/{n_ok} correct files agree with the model answer (<= {TOL}); "
          f"{wrong_differ}/{n_wrong} wrong files run on every case and differ; {n_bad} problem(s)")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
