"""Blind batch b45 harness: the encoder-layer and decoder-layer files against the model answers.

Run from the repository root:  .venv/bin/python tests/blind45/harness.py

For every file of the batch it imports the file and the model answer by path, copies the model's
(perturbed) weights into the file's layer, and runs both in float64 on the cases below, post-LN and
pre-LN. A correct file must agree within 1e-8 on every case. A wrong file must run and differ on at
least one case, and agree on every case once its `# MISTAKE` line is replaced by the fix kept here.
It never imports attn_drill and never runs the attn-drill command.
"""

import importlib.util
import re
import sys
import types
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-8
D_MODEL, HEADS, D_FF = 32, 4, 48

# file name -> the fixed text of its `# MISTAKE` line (indentation is taken from the file); None = correct file
FILES = {
    "encoder-layer": {
        "ok__blind_b45_einsum_bias_always.py": None,
        "ok__blind_b45_helpers_manual_softmax.py": None,
        "missing-scale__blind_b45_einsum_scale_unused.py":
            'scores = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale',
        "wrong-head-merge__blind_b45_reshape_no_transpose.py":
            "out = (attn @ v).transpose(1, 2).reshape(B, Tq, self.d_model)",
        "norm-placement__blind_b45_pre_ln_ff_post.py":
            "x = x + self.feed_forward(self.norm2(x))",
        "missing-activation__blind_b45_bmm_heads_linear_ffn.py":
            "return self.ff2(torch.relu(self.ff1(x)))",
        "missing-residual__blind_b45_head_loop_pre_ln_overwrite.py":
            "x = x + self.self_attn(h, h, h, mask)[0]",
    },
    "decoder-layer": {
        "ok__blind_b45_permute_triu.py": None,
        "ok__blind_b45_bmm_flat_heads.py": None,
        "projection-before-merge__blind_b45_wo_row_blocks.py":
            "Wo = self.W_o.weight.t().reshape(H, d, D)",
        "softmax-wrong-dim__blind_b45_dim_two.py":
            "attn = F.softmax(scores, dim=3)",
        "missing-causal-mask__blind_b45_causal_never_combined.py":
            "self_mask = causal[None] if tgt_mask is None else causal[None] & tgt_mask",
        "cross-attention-swapped__blind_b45_memory_asks.py":
            "y = self.cross_attn(h, memory, memory, memory_mask)[0]",
        "mask-misrouted__blind_b45_tgt_mask_to_cross.py":
            "c, _ = self.cross_attn(h, memory, memory, mask=memory_mask)",
    },
}
REFERENCE = {"encoder-layer": "reference/encoder_layer.py", "decoder-layer": "reference/decoder_layer.py"}
CLASS = {"encoder-layer": "EncoderLayer", "decoder-layer": "DecoderLayer"}
# slugs whose mistake sits inside MultiHeadAttention: there the attention alone must differ too
ATTENTION_SLUGS = {"missing-scale", "wrong-head-merge", "projection-before-merge", "softmax-wrong-dim"}

_counter = 0


def load_path(path):
    global _counter
    _counter += 1
    spec = importlib.util.spec_from_file_location(f"b45_mod_{_counter}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_source(source, filename):
    global _counter
    _counter += 1
    mod = types.ModuleType(f"b45_patched_{_counter}")
    mod.__file__ = filename
    sys.modules[mod.__name__] = mod  # so that anything looking the module up by name finds it
    exec(compile(source, filename, "exec"), mod.__dict__)
    return mod


def random_mask(gen, B, Tq, Tk, causal_safe):
    """(B, Tq, Tk) bool with at least one visible key per row (the diagonal when causal_safe)."""
    m = torch.rand(B, Tq, Tk, generator=gen) < 0.6
    if causal_safe:
        m |= torch.eye(Tq, Tk, dtype=torch.bool).unsqueeze(0)
    else:
        m[:, :, 0] = True
    return m


def lengths_mask(lengths, T):
    return (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).unsqueeze(1)  # (B, 1, T)


def encoder_cases():
    gen = torch.Generator().manual_seed(45)
    cases = []
    for B, T in ((2, 6), (4, 5), (3, 7)):  # B == H once
        x = torch.randn(B, T, D_MODEL, generator=gen, dtype=torch.float64)
        cases.append((f"B={B} T={T} no mask", (x,), {}))
        lengths = [T] + [max(1, T - 2 - i) for i in range(B - 1)]
        cases.append((f"B={B} T={T} mask (B,1,T)", (x, lengths_mask(lengths, T)), {}))
        cases.append((f"B={B} T={T} mask (B,T,T)", (x, random_mask(gen, B, T, T, True)), {}))
    return cases


def decoder_cases():
    gen = torch.Generator().manual_seed(4545)
    cases = []
    for B, Tq, Tk in ((2, 5, 5), (3, 4, 7), (4, 6, 3)):
        x = torch.randn(B, Tq, D_MODEL, generator=gen, dtype=torch.float64)
        mem = torch.randn(B, Tk, D_MODEL, generator=gen, dtype=torch.float64)
        tag = f"B={B} Tq={Tq} Tk={Tk}"
        cases.append((f"{tag} no masks", (x, mem), {}))
        tq_len = [Tq] + [max(1, Tq - 1 - i) for i in range(B - 1)]
        tk_len = [max(1, Tk - i) for i in range(B)]
        cases.append((f"{tag} tgt (B,1,Tq) mem (B,1,Tk)", (x, mem),
                      {"tgt_mask": lengths_mask(tq_len, Tq), "memory_mask": lengths_mask(tk_len, Tk)}))
        cases.append((f"{tag} tgt (B,Tq,Tq) mem (B,Tq,Tk)", (x, mem),
                      {"tgt_mask": random_mask(gen, B, Tq, Tq, True),
                       "memory_mask": random_mask(gen, B, Tq, Tk, False)}))
        cases.append((f"{tag} tgt only", (x, mem), {"tgt_mask": random_mask(gen, B, Tq, Tq, True)}))
        cases.append((f"{tag} memory only", (x, mem), {"memory_mask": random_mask(gen, B, Tq, Tk, False)}))
    return cases


def build_reference(ref_mod, exercise, norm_first):
    torch.manual_seed(1000 + int(norm_first))
    layer = getattr(ref_mod, CLASS[exercise])(D_MODEL, HEADS, D_FF, norm_first=norm_first).double().eval()
    with torch.no_grad():
        for p in layer.parameters():  # norms and biases away from 1 and 0, so every weight shows
            p.add_(0.1 * torch.randn_like(p))
    return layer


def build_candidate(mod, exercise, norm_first, ref_layer):
    layer = getattr(mod, CLASS[exercise])(D_MODEL, HEADS, D_FF, norm_first=norm_first).double().eval()
    # same parameter names as the model answer (the contract's names): a strict copy
    layer.load_state_dict(ref_layer.state_dict(), strict=True)
    return layer


def compare(mod, ref_mod, exercise, cases):
    """One result per (norm_first, case): ('agree', diff), ('differ', diff) or ('raise', message)."""
    results = []
    for norm_first in (False, True):
        ref = build_reference(ref_mod, exercise, norm_first)
        cand = build_candidate(mod, exercise, norm_first, ref)
        for name, args, kwargs in cases:
            label = f"{'pre' if norm_first else 'post'}-LN {name}"
            with torch.no_grad():
                expected = ref(*args, **kwargs)
                try:
                    got = cand(*args, **kwargs)
                except Exception as exc:  # a wrong file may raise on some shapes
                    results.append((label, "raise", f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"))
                    continue
            if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
                results.append((label, "differ", float("inf")))
                continue
            diff = (got - expected).abs().max().item()
            ok = bool(torch.isfinite(got).all()) and diff <= TOL
            results.append((label, "agree" if ok else "differ", diff if diff == diff else float("inf")))
    return results


def compare_mha(mod, ref_mod):
    """The file's MultiHeadAttention alone (default bias), cross-attention with Tq != Tk: 'agree', 'differ' or 'raise'."""
    gen = torch.Generator().manual_seed(4500)
    torch.manual_seed(4501)
    ref = ref_mod.MultiHeadAttention(D_MODEL, HEADS).double().eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.1 * torch.randn_like(p))
    cand = mod.MultiHeadAttention(D_MODEL, HEADS).double().eval()
    cand.load_state_dict(ref.state_dict(), strict=True)
    B, Tq, Tk = 3, 4, 6
    q = torch.randn(B, Tq, D_MODEL, generator=gen, dtype=torch.float64)
    kv = torch.randn(B, Tk, D_MODEL, generator=gen, dtype=torch.float64)
    verdict = "agree"
    for mask in (None, lengths_mask([6, 3, 1], Tk), random_mask(gen, B, Tq, Tk, False)):
        with torch.no_grad():
            eo, ew = ref(q, kv, kv, mask)
            try:
                go, gw = cand(q, kv, kv, mask)
            except Exception:
                return "raise"
        if go.shape != eo.shape or gw.shape != ew.shape:
            return "differ"
        if not ((go - eo).abs().max() <= TOL and (gw - ew).abs().max() <= TOL):
            verdict = "differ"
    return verdict


def patched_source(path, fixed):
    lines = path.read_text().splitlines(keepends=True)
    marked = [i for i, line in enumerate(lines) if line.rstrip().endswith("# MISTAKE")]
    assert len(marked) == 1, f"{path.name}: {len(marked)} '# MISTAKE' lines"
    i = marked[0]
    indent = re.match(r"\s*", lines[i]).group(0)
    lines[i] = indent + fixed + "\n"
    return "".join(lines), i + 1


def check_docstring(path):
    first = path.read_text().splitlines()[0]
    return first.startswith('"""') and first.endswith('"""') and len(first) > 6


def main():
    failures = 0
    total = 0
    for exercise, files in FILES.items():
        ref_mod = load_path(ROOT / REFERENCE[exercise])
        cases = encoder_cases() if exercise == "encoder-layer" else decoder_cases()
        for fname, fixed in files.items():
            total += 1
            path = ROOT / "tests" / "corpus" / exercise / fname
            problems = []
            if not check_docstring(path):
                problems.append("first line is not a one-line docstring")
            text = path.read_text()
            n_marks = sum(1 for line in text.splitlines() if line.rstrip().endswith("# MISTAKE"))
            try:
                res = compare(load_path(path), ref_mod, exercise, cases)
            except Exception as exc:
                res = []
                problems.append(f"could not build/run: {type(exc).__name__}: {exc}")
            try:
                mha = compare_mha(load_path(path), ref_mod)
            except Exception as exc:
                mha = f"error ({type(exc).__name__})"
            slug = fname.split("__")[0]
            want_mha = "differ" if slug in ATTENTION_SLUGS else "agree"
            if mha != want_mha:
                problems.append(f"MultiHeadAttention alone: {mha}, expected {want_mha}")
            n = len(res)
            agree = sum(1 for r in res if r[1] == "agree")
            differ = sum(1 for r in res if r[1] == "differ")
            raised = sum(1 for r in res if r[1] == "raise")
            if fixed is None:
                if n_marks:
                    problems.append(f"{n_marks} '# MISTAKE' marks in a correct file")
                maxdiff = max((r[2] for r in res if r[1] != "raise"), default=float("nan"))
                if res and agree != n:
                    bad = [r for r in res if r[1] != "agree"][0]
                    problems.append(f"disagrees on {n - agree}/{n} cases, first: {bad[0]} ({bad[1]} {bad[2]})")
                detail = f"correct: agrees on {agree}/{n} cases (max |diff| {maxdiff:.1e})"
            else:
                first_diff = next((r for r in res if r[1] == "differ"), None)
                if n_marks != 1:
                    problems.append(f"{n_marks} '# MISTAKE' marks, expected 1")
                    line_no, fix_res = "?", []
                else:
                    src, line_no = patched_source(path, fixed)
                    try:
                        fix_res = compare(load_source(src, str(path) + " (fixed)"), ref_mod, exercise, cases)
                    except Exception as exc:
                        fix_res = []
                        problems.append(f"fixed file could not build/run: {type(exc).__name__}: {exc}")
                if differ == 0:
                    problems.append("never runs and differs (the mistake does not show)")
                fix_agree = sum(1 for r in fix_res if r[1] == "agree")
                if fix_res and fix_agree != len(fix_res):
                    bad = [r for r in fix_res if r[1] != "agree"][0]
                    problems.append(f"fixed line still disagrees on {len(fix_res) - fix_agree} cases, "
                                    f"first: {bad[0]} ({bad[1]} {bad[2]})")
                fd = f", e.g. {first_diff[0]} |diff| {first_diff[2]:.2g}" if first_diff else ""
                detail = (f"mistake on line {line_no}: differs on {differ}/{n} cases, raises on {raised}/{n}{fd}; "
                          f"fixed line agrees on {fix_agree}/{len(fix_res)}")
            detail += f"; MultiHeadAttention alone {mha}s"
            status = "PASS" if not problems else "FAIL"
            failures += bool(problems)
            print(f"{status}  {exercise:13s}  {fname}: {detail}" + ("".join(f"\n      ! {p}" for p in problems)))
    print(f"{total - failures}/{total} files as intended" + ("" if failures else " (all)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
