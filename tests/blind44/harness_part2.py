"""Blind batch b44, part 2: check the llama-block, mla and kv-cache corpus files against the model answers.

Correct files must agree with reference/<file>.py within 1e-8 (float64, outputs and caches); each wrong file must
run without raising and differ; and each wrong file, with its single `# MISTAKE` line replaced by the fix below,
must agree again (so the mistake sits on that one line). Run: python tests/blind44/harness_part2.py
"""

import math
import re
import sys
import types
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
TOL = 1e-8

EXERCISES = {
    "llama-block": "llama_block.py",
    "mla": "mla.py",
    "kv-cache": "kv_cache.py",
}

# file name -> the fixed text of its `# MISTAKE` line (leading indentation is kept from the original)
FIXES = {
    "rmsnorm-eps-misplaced__blind_b44_meta_matmul.py":
        "return x / torch.sqrt(ms + self.eps) * self.weight",
    "causal-diagonal__blind_b44_triu_finfo.py":
        "blocked = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)",
    "rope-interleaved__blind_b44_evenodd_where.py":
        "x1, x2 = x[..., : d // 2], x[..., d // 2 :]",
    "wrong-scale__blind_b44_dmodel_scale.py":
        "scale = 1.0 / math.sqrt(self.hd)",
    "wrong-scale__blind_b44_naive_matmul.py":
        "scale = 1.0 / math.sqrt(self.d_nope + self.d_rope)",
    "rope-positions-ignored__blind_b44_naive_einsum.py":
        "pos = torch.arange(past, past + t, device=x.device)",
    "mla-latent-not-normalised__blind_b44_slices.py":
        "latent = self.kv_norm(kv_a[..., :r])",
    "mla-rope-misplaced__blind_b44_nope_rotated.py":
        "q_pe = apply_rope(q_pe, positions, self.rope_base)",
    "causal-misaligned__blind_b44_tril_topleft.py":
        "mask = torch.tril(torch.ones(T, Tk, dtype=torch.bool, device=x.device), diagonal=start)",
    "softmax-wrong-dim__blind_b44_einsum_where.py":
        "probs = F.softmax(scores, dim=-1)",
    "missing-scale__blind_b44_baddbmm.py":
        "scores = torch.baddbmm(bias.expand(B * H, T, S), q_flat, k_full.transpose(1, 2), alpha=1.0 / math.sqrt(dh))",
    "rope-wrong-direction__blind_b44_rotate_sign.py":
        "return torch.cat((-x2, x1), dim=-1)",
}

ALLOWED_IMPORTS = {"torch", "math", "torch.nn", "torch.nn.functional"}


def load(src: str, name: str):
    mod = types.ModuleType(name)
    mod.__file__ = name
    exec(compile(src, name, "exec"), mod.__dict__)
    return mod


def randomize(module: nn.Module, seed: int):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for pname, p in module.named_parameters():
            if p.dim() == 1:  # norm weights
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))
            else:
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) / math.sqrt(p.shape[1]) * 1.5)


def build_pair(ref_mod, cand_mod, cls_name, args, kwargs, seed):
    ref = getattr(ref_mod, cls_name)(*args, **kwargs).double().eval()
    cand = getattr(cand_mod, cls_name)(*args, **kwargs).double().eval()
    randomize(ref, seed)
    cand.load_state_dict(ref.state_dict(), strict=True)
    return ref, cand


def maxdiff(a, b):
    if not isinstance(b, torch.Tensor) or a.shape != b.shape:
        return float("inf")
    if not torch.isfinite(b).all():
        return float("nan")
    return (a - b).abs().max().item()


# ----------------------------------------------------------------------------------------------- cases
def llama_cases():
    out = []
    configs = [
        dict(args=(32, 4, 2, 40), kwargs={}),
        dict(args=(48, 6, 3, 64), kwargs=dict(eps=0.1)),
        dict(args=(16, 2, 1, 24), kwargs=dict(rope_base=500.0)),
        dict(args=(48, 6, 2, 32), kwargs=dict(eps=0.1, rope_base=100.0)),
    ]
    for ci, cfg in enumerate(configs):
        g = torch.Generator().manual_seed(100 + ci)
        B, T = 2, 7
        D = cfg["args"][0]
        x = torch.randn(B, T, D, generator=g, dtype=torch.float64)
        gaps = torch.randint(1, 5, (T,), generator=g)
        pos_t = torch.cumsum(gaps, 0) - gaps[0]
        pos_bt = torch.stack([pos_t, torch.cumsum(torch.randint(1, 7, (T,), generator=g), 0) + 3])
        for pname, pos in [("none", None), ("shift", torch.arange(T) + 5), ("T-gaps", pos_t), ("BT", pos_bt)]:
            out.append((f"cfg{ci}/{pname}", cfg, x, pos))
    return out


def run_llama(ref_mod, cand_mod, seed=0):
    worst = 0.0
    details = []
    for name, cfg, x, pos in llama_cases():
        ref, cand = build_pair(ref_mod, cand_mod, "LlamaBlock", cfg["args"], cfg["kwargs"], seed)
        with torch.no_grad():
            r = ref(x, pos) if pos is not None else ref(x)
            c = cand(x, pos) if pos is not None else cand(x)
        d = maxdiff(r, c)
        details.append((name, d))
        worst = d if (math.isnan(d) or d > worst) else worst
    # RMSNorm and SwiGLU on their own
    g = torch.Generator().manual_seed(7)
    for eps in (1e-6, 0.1):
        rn = ref_mod.RMSNorm(12, eps=eps).double()
        cn = cand_mod.RMSNorm(12, eps=eps).double()
        randomize(rn, 3)
        cn.load_state_dict(rn.state_dict())
        xx = torch.randn(3, 5, 12, generator=g, dtype=torch.float64)
        with torch.no_grad():
            d = maxdiff(rn(xx), cn(xx))
        details.append((f"RMSNorm eps={eps}", d))
        worst = d if (math.isnan(d) or d > worst) else worst
    rs = ref_mod.SwiGLU(12, 20).double()
    cs = cand_mod.SwiGLU(12, 20).double()
    randomize(rs, 4)
    cs.load_state_dict(rs.state_dict())
    xx = torch.randn(3, 5, 12, generator=g, dtype=torch.float64)
    with torch.no_grad():
        d = maxdiff(rs(xx), cs(xx))
    details.append(("SwiGLU", d))
    worst = d if (math.isnan(d) or d > worst) else worst
    return worst, details


def run_cached(ref_mod, cand_mod, cls_name, configs, seed=0):
    """Prefill, then one-token calls (and one chunked schedule), each module fed its own cache back."""
    worst = 0.0
    details = []
    for ci, cfg in enumerate(configs):
        g = torch.Generator().manual_seed(200 + ci)
        D = cfg["args"][0]
        for sched in ([5, 1, 1, 1, 1], [3, 2, 1, 4, 1], [1, 1, 1]):
            ref, cand = build_pair(ref_mod, cand_mod, cls_name, cfg["args"], cfg["kwargs"], seed + ci)
            B = 2
            xs = [torch.randn(B, t, D, generator=g, dtype=torch.float64) for t in sched]
            rc = cc = None
            for step, x in enumerate(xs):
                with torch.no_grad():
                    ro, rc = ref(x, rc)
                    co, cc = cand(x, cc)
                d = max_nan(maxdiff(ro, co), maxdiff(rc[0], cc[0]), maxdiff(rc[1], cc[1]))
                details.append((f"cfg{ci}/{sched}/step{step}", d))
                worst = max_nan(worst, d)
    return worst, details


def max_nan(*vals):
    if any(math.isnan(v) for v in vals):
        return float("nan")
    return max(vals)


KV_CONFIGS = [
    dict(args=(32, 4, 2), kwargs={}),
    dict(args=(48, 6, 3), kwargs=dict(rope_base=500.0)),
    dict(args=(24, 3, 1), kwargs={}),
    dict(args=(32, 4, 4), kwargs=dict(rope_base=100.0)),
]
MLA_CONFIGS = [
    dict(args=(32, 4, 12, 8, 4, 6), kwargs={}),
    dict(args=(24, 3, 10, 6, 8, 4), kwargs=dict(rope_base=500.0)),
    dict(args=(40, 5, 14, 4, 6, 10), kwargs=dict(rope_base=100.0)),
]


def compare(exercise, ref_mod, cand_mod):
    if exercise == "llama-block":
        return run_llama(ref_mod, cand_mod)
    if exercise == "kv-cache":
        return run_cached(ref_mod, cand_mod, "CachedSelfAttention", KV_CONFIGS)
    return run_cached(ref_mod, cand_mod, "MultiHeadLatentAttention", MLA_CONFIGS)


def smoke_float32(exercise, cand_mod):
    """Runs in float32 without raising and keeps the dtype."""
    torch.manual_seed(0)
    if exercise == "llama-block":
        m = cand_mod.LlamaBlock(32, 4, 2, 40).float().eval()
        x = torch.randn(2, 6, 32)
        with torch.no_grad():
            y = m(x, torch.arange(6) * 2)
        return y.dtype == torch.float32
    if exercise == "kv-cache":
        m = cand_mod.CachedSelfAttention(32, 4, 2).float().eval()
    else:
        m = cand_mod.MultiHeadLatentAttention(32, 4, 12, 8, 4, 6).float().eval()
    with torch.no_grad():
        y, c = m(torch.randn(2, 4, 32))
        y2, c = m(torch.randn(2, 1, 32), c)
    return y.dtype == y2.dtype == c[0].dtype == c[1].dtype == torch.float32


# ------------------------------------------------------------------------------------------ static checks
def static_checks(path: Path, wrong: bool):
    problems = []
    lines = path.read_text().splitlines()
    marked = [i for i, l in enumerate(lines, 1) if "MISTAKE" in l]
    if wrong:
        if len(marked) != 1 or not lines[marked[0] - 1].rstrip().endswith("# MISTAKE"):
            problems.append(f"expected exactly one line ending in '# MISTAKE', found lines {marked}")
    elif marked:
        problems.append(f"correct file mentions MISTAKE on lines {marked}")
    for l in lines:
        m = re.match(r"\s*(?:from\s+(\S+)\s+import|import\s+(\S+))", l)
        if m:
            name = m.group(1) or m.group(2)
            if name not in ALLOWED_IMPORTS:
                problems.append(f"import of {name}")
    return problems, (marked[0] if marked else None)


def main():
    rows = []
    ok_count = bad_count = 0
    for exercise, fname in EXERCISES.items():
        ref_mod = load((ROOT / "reference" / fname).read_text(), f"ref_{fname}")
        for path in sorted((CORPUS / exercise).glob("*__blind_b44_*.py")):
            slug = path.name.split("__", 1)[0]
            wrong = slug != "ok"
            problems, mline = static_checks(path, wrong)
            src = path.read_text()
            try:
                cand = load(src, path.name)
                worst, details = compare(exercise, ref_mod, cand)
                smoke = smoke_float32(exercise, cand)
            except Exception as exc:  # noqa: BLE001
                worst, details, smoke = None, [], False
                problems.append(f"raised {type(exc).__name__}: {exc}")
            if not smoke:
                problems.append("float32 smoke run failed or changed the dtype")
            fixed_worst = None
            if wrong and worst is not None:
                if math.isnan(worst):
                    problems.append("NaN/inf in the wrong file's outputs")
                elif worst <= TOL:
                    problems.append(f"does NOT differ (max diff {worst:.2e})")
                fix = FIXES.get(path.name)
                if fix is None or mline is None:
                    problems.append("no fix registered")
                else:
                    lines = src.splitlines()
                    old = lines[mline - 1]
                    indent = old[: len(old) - len(old.lstrip())]
                    lines[mline - 1] = indent + fix
                    fixed = load("\n".join(lines) + "\n", path.name + "[fixed]")
                    fixed_worst, _ = compare(exercise, ref_mod, fixed)
                    if not (fixed_worst <= TOL):
                        problems.append(f"one-line fix does not restore agreement (max diff {fixed_worst:.2e})")
            elif worst is not None and not (worst <= TOL):
                problems.append(f"does NOT agree (max diff {worst})")
                for n, d in details:
                    if not (d <= TOL):
                        problems.append(f"   {n}: {d}")
            intended = not problems
            ok_count += intended
            bad_count += not intended
            verdict = ("differs" if wrong else "agrees") if intended else "PROBLEM"
            extra = f" fixed={fixed_worst:.1e}" if fixed_worst is not None else ""
            wtxt = "raise" if worst is None else f"{worst:.2e}"
            rows.append(f"{verdict:8s} {exercise:12s} {path.name:58s} line={mline or '-'} maxdiff={wtxt}{extra}")
            for p in problems:
                rows.append(f"         ! {p}")
    print("\n".join(rows))
    print(f"\nSUMMARY: {ok_count} of {ok_count + bad_count} files behave as intended "
          f"({bad_count} problems)")
    return 1 if bad_count else 0


if __name__ == "__main__":
    sys.exit(main())
