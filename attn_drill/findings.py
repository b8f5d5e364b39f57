"""The wording of every finding, kept apart from detection (as exercism's analyzers do).

Detection code says *what* it found: a slug, evidence and a few parameters. This table says how to
tell the user: level, title, why it matters, the fix. Parameters fill `{name}` fields in the texts.
No torch here.
"""

from __future__ import annotations

from attn_drill.report import Finding

ERROR, WARNING = "error", "warning"

# slug: (level, title, why it matters, fix)
WORDING: dict[str, tuple[str, str, str, str]] = {
    "missing-scale": (
        ERROR,
        "Scores are not divided by sqrt(d)",
        "Without 1/sqrt(d) the dot products grow with the head dim, softmax saturates and gradients vanish.",
        "Divide the scores by math.sqrt(d), d being the last dim of q and k: scores = q @ k.transpose(-2, -1) / math.sqrt(d).",
    ),
    "wrong-scale": (
        ERROR,
        "Scores are scaled by the wrong factor",
        "The scale must be 1/sqrt(d) with d the per-head dim (the last dim of q and k), not d_model, d or dv.",
        "Use scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)).",
    ),
    "softmax-wrong-dim": (
        ERROR,
        "Softmax normalises over the wrong axis",
        "Each query's weights must sum to 1 over the keys; normalising another axis mixes queries or heads.",
        "Take the softmax over the last axis (the keys): softmax(scores, dim=-1).",
    ),
    "softmax-unstable": (
        ERROR,
        "Softmax is not numerically stable",
        "exp() overflows for large inputs, and one max for the whole tensor underflows the slices far below it "
        "to 0/0; subtracting each slice's own max keeps every exponent <= 0 and the largest at exactly 0.",
        "Subtract the per-row max first: x - x.amax(dim, keepdim=True), then exp and normalise.",
    ),
    "mask-inverted": (
        ERROR,
        "The mask is inverted",
        "Here True means 'may attend' (as in a boolean attn_mask of F.scaled_dot_product_attention); "
        "nn.MultiheadAttention's masks and many codebases' padding masks use the opposite convention, "
        "True = 'ignore'.",
        "True must mean 'may attend': build masks from keep-conditions (j <= i, j < length); apply one by hiding "
        "where it is False: scores.masked_fill(~mask, float('-inf')).",
    ),
    "mask-ignored": (
        ERROR,
        "The mask changes nothing",
        "Masked keys must get exactly zero weight; your output is the same with or without the mask.",
        "Apply it to the scores before the softmax: scores = scores.masked_fill(~mask, float('-inf')).",
    ),
    "mask-after-softmax": (
        ERROR,
        "The mask is applied after the softmax",
        "Zeroing probabilities after normalising leaves rows that no longer sum to 1.",
        "Mask the scores before the softmax, with -inf (or finfo.min), not the probabilities after it.",
    ),
    "mask-head-broadcast": (
        ERROR,
        "The mask is broadcast without a head axis",
        "A (B, Tq, Tk) mask against (B, H, Tq, Tk) scores lines B up with H: an error when B != H, "
        "and silently batch b's mask on head b when B == H.",
        "Insert the head axis before masking: mask = mask.unsqueeze(1)  # (B, 1, Tq, Tk).",
    ),
    "causal-diagonal": (
        ERROR,
        "The causal mask is off by one at the diagonal",
        "Query i must see key i (itself) and nothing after it.",
        "Build it with j <= i + (Tk - Tq), e.g. torch.ones(Tq, Tk).tril(diagonal=Tk - Tq).bool().",
    ),
    "causal-misaligned": (
        ERROR,
        "The causal mask is top-left aligned",
        "With Tq != Tk (a KV cache) the queries are the last Tq positions, so the mask must be aligned "
        "bottom-right; SDPA's is_causal=True is top-left, a classic trap.",
        "Use tril(diagonal=Tk - Tq): query i sees key j iff j <= i + (Tk - Tq).",
    ),
    "padding-off-by-one": (
        ERROR,
        "Padding keeps one key too many or too few",
        "Sequence b has keys 0 .. lengths[b]-1; key lengths[b] is the first padded one.",
        "Use torch.arange(t, device=lengths.device) < lengths[:, None] (strictly less).",
    ),
    "padding-on-queries": (
        ERROR,
        "Padding hides query rows instead of key columns",
        "A padded key must be hidden from every query; the mask varies along the key axis (the last).",
        "Put the length test on the last axis: mask[b, 0, i, j] = j < lengths[b].",
    ),
    "wrong-head-split": (
        ERROR,
        "Heads are split the wrong way",
        "view(B, H, T, d) cuts (T, D) into contiguous blocks, mixing time steps into heads; "
        "head h must own features [h*d, (h+1)*d) of every token.",
        "Split with x.view(B, T, H, d).transpose(1, 2)  # (B, H, T, d).",
    ),
    "wrong-head-merge": (
        ERROR,
        "Heads are merged without moving the head axis back",
        "reshape(B, T, D) on (B, H, T, d) interleaves time steps and heads; head h must return to features [h*d, (h+1)*d).",
        "Merge with y.transpose(1, 2).reshape(B, T, D)  # (B, H, T, d) -> (B, T, H, d) -> (B, T, D).",
    ),
    "missing-output-projection": (
        ERROR,
        "The output projection W_o is not applied",
        "Multi-head attention mixes the heads with a final linear layer.",
        "Return self.W_o(merged), not the merged heads themselves.",
    ),
    "qkv-split-order": (
        ERROR,
        "The fused projection is split in the wrong order",
        "(..., H, 3, d), each head's q, k, v side by side, is the per-head fused layout of GPT-NeoX and BLOOM, a "
        "convention of its own; here W_qkv's output is [q | k | v], each D wide, with heads inside each, the "
        "layout of nn.MultiheadAttention's in_proj_weight.",
        "Split with qkv.split(D, dim=-1) (or view(B, T, 3, H, d)), not view(B, T, H, 3, d).",
    ),
    "relpos-direction": (
        ERROR,
        "The relative offset runs the wrong way",
        "r_ij belongs to key j's offset from query i, j - i: a key in the past has a negative offset. With i - j "
        "every query reads the past with the future's embeddings.",
        "Build the offsets as arange(T)[None, :] - arange(T)[:, None]  # [i, j] = j - i.",
    ),
    "relpos-no-clip": (
        ERROR,
        "Offsets beyond max_distance are not clipped",
        "rel_k holds 2 * max_distance + 1 embeddings; every offset further than max_distance must share the "
        "last one on its side. That is what lets the layer run on sequences longer than any it was trained on.",
        "Clamp before the lookup: self.rel_k(offsets.clamp(-max_distance, max_distance) + max_distance).",
    ),
    "relpos-unscaled": (
        ERROR,
        "The position term is not scaled",
        "q_i . r_ij is a dot product of d features like q_i . k_j: it grows with d the same way, so both are "
        "divided by sqrt(d), together.",
        "Add the two terms first, then scale: scores = (q @ k.transpose(-2, -1) + position) / math.sqrt(d).",
    ),
    "kv-repeat-order": (
        ERROR,
        "KV heads are tiled instead of interleaved",
        "Query head h reads kv head h // (H // Hkv): consecutive query heads share one kv head.",
        "Use k.repeat_interleave(H // Hkv, dim=1), not k.repeat(1, H // Hkv, 1, 1).",
    ),
    "rope-interleaved": (
        ERROR,
        "RoPE rotates adjacent pairs",
        "Pairing neighbours (2i, 2i+1) is the interleaved layout of Meta's LLaMA and GPT-J, a convention of its own; "
        "this exercise uses the half-split layout of GPT-NeoX and Hugging Face: dimension i pairs with i + d/2.",
        "Split x into halves x1, x2 = x.chunk(2, -1) and use cat(-x2, x1) as the rotated partner.",
    ),
    "rope-wrong-frequencies": (
        ERROR,
        "RoPE uses the wrong frequencies",
        "Pair i turns at base ** (-2i/d), i in [0, d/2).",
        "inv_freq = 1.0 / base ** (torch.arange(0, d, 2).float() / d).",
    ),
    "rope-wrong-direction": (
        ERROR,
        "RoPE rotates the wrong way",
        "Rotating by -theta is a convention some code follows (a conjugated freqs_cis, rotate_half written as "
        "cat(x2, -x1)); this exercise rotates by +theta: out_i = x_i cos - x_(i+d/2) sin.",
        "Swap the sign: use cat(-x2, x1), not cat(x2, -x1).",
    ),
    "rope-positions-ignored": (
        ERROR,
        "RoPE ignores the given positions",
        "Token t is rotated by its own position (positions[t], or the cache offset), not by t.",
        "Compute the angles from the positions argument (or from T_past + arange(T_new)).",
    ),
    "cache-wrong-axis": (
        ERROR,
        "New keys/values are concatenated on the wrong axis",
        "The cache grows along time: (B, Hkv, T, d), axis 2.",
        "torch.cat([k_past, k_new], dim=2).",
    ),
    "online-softmax-no-rescale": (
        ERROR,
        "The accumulator is not rescaled when the running max changes",
        "When a later block raises the row max, earlier sums and outputs must be multiplied by exp(m_old - m_new).",
        "acc = acc * exp(m_old - m_new) + exp(s - m_new) @ v; l = l * exp(m_old - m_new) + rowsum.",
    ),
    "scale-after-softmax": (
        ERROR,
        "1/sqrt(d) is applied after the softmax, not to the scores",
        "The scale exists to keep the scores small before the softmax; applied to the weights or the output it "
        "leaves the softmax saturated and just shrinks the result (the weights no longer sum to 1).",
        "Scale the scores, then take the softmax: weights = softmax(q @ k.transpose(-2, -1) / math.sqrt(d)).",
    ),
    "mask-fill-zero": (
        ERROR,
        "Hidden scores are set to {value}, not -inf",
        "A finite fill such as 0 or -1 is an ordinary score: exp of it is far from 0, so the hidden keys keep "
        "weight (multiplying the scores by the mask does the same, with 0).",
        "Fill hidden scores with float('-inf') (or torch.finfo(scores.dtype).min) before the softmax: "
        "scores.masked_fill(~mask, float('-inf')).",
    ),
    "wrong-projection": (
        ERROR,
        "One projection is used in another's place",
        "Queries, keys and values each have their own layer and their own input; reusing one layer (or one "
        "input) for another role gives attention a different set of vectors.",
        "q = W_q(query), k = W_k(key), v = W_v(value) (in a fused layer, the [q | k | v] slices in that order); "
        "check which layer and which input each line uses.",
    ),
    "projection-before-merge": (
        ERROR,
        "W_o is applied to each head before the merge, in a way that changes the result",
        "W_o(merge(heads)) equals the sum over heads of each head times W_o's column block for it, plus the bias "
        "once; other per-head forms (the bias per head, row blocks, diagonal blocks) are another computation.",
        "Merge the heads to (B, T, H * d) first, then apply W_o once: self.W_o(y.transpose(1, 2).reshape(B, T, -1)).",
    ),
    "online-softmax-no-normalise": (
        ERROR,
        "The accumulator is not divided by the final running sum",
        "The online softmax sums exp(s - m) @ v unnormalised; only at the end, once every block is in, is it "
        "divided by the running sum l, so the weights sum to 1.",
        "After the loop over key blocks: out = acc / l (l rescaled with acc at every block).",
    ),
    "rope-on-values": (
        ERROR,
        "RoPE is applied to the values too",
        "RoPE turns q and k so that their dot product depends on the offset between positions; v is not in "
        "the dot product, and turning it mixes each value's features by its position.",
        "Apply RoPE to q and k only; cache v as W_v(x) gives it.",
    ),
    "full-scores-materialized": (
        ERROR,
        "A full (Tq, Tk) score matrix is created",
        "Flash attention keeps one (Tq, block_size) block of scores at a time, so its memory grows linearly with T; "
        "a (Tq, Tk) tensor (scores, probabilities or a mask) grows quadratically: 16 GiB in float32 at T = 65536.",
        "Loop over key blocks of block_size; keep a running max, sum and output per query row; build each block's "
        "causal mask from its indices, never the whole (Tq, Tk) one.",
    ),
    "missing-residual": (
        ERROR,
        "No residual connection around {sublayer}",
        "A sub-layer's output is added to its input, x + f(x), never put in its place: the residual path carries "
        "the signal and the gradient straight through a deep stack; without it the layer forgets its input.",
        "Add {sublayer}'s output to its input: x = norm(x + f(x)) post-LN, x = x + f(norm(x)) pre-LN.",
    ),
    "norm-placement": (
        ERROR,
        "The LayerNorms are in the wrong place",
        "Post-LN (norm_first=False) normalises the sum, norm(x + f(x)); pre-LN (norm_first=True) normalises only "
        "what the sub-layer reads, x + f(norm(x)), and never the residual stream. They train differently: pre-LN "
        "keeps gradients tame in deep stacks without a warm-up, post-LN needs one.",
        "For each sub-layer, with its own norm: if self.norm_first: x = x + f(self.norm1(x)), "
        "else: x = self.norm1(x + f(x)).",
    ),
    "missing-activation": (
        ERROR,
        "The feed-forward has no ReLU between its two layers",
        "Two linear layers with nothing between them are one linear map: the ReLU is the layer's per-token "
        "non-linearity.",
        "ff(x) = self.ff2(torch.relu(self.ff1(x))).",
    ),
    "missing-causal-mask": (
        ERROR,
        "The decoder's self-attention sees later tokens",
        "A decoder is trained on the whole target at once: without the causal mask token i attends to the tokens "
        "after it, the very ones it must predict, and learns to copy them.",
        "Build causal = torch.ones(Tq, Tq, dtype=torch.bool, device=x.device).tril().unsqueeze(0) and give "
        "self-attention causal & tgt_mask (causal alone when tgt_mask is None).",
    ),
    "cross-attention-swapped": (
        ERROR,
        "Cross-attention's queries and keys are swapped",
        "Each decoder token asks the encoder's output: the queries come from x, the keys and values from memory, "
        "so the result has one row per decoder token (Tq), not per memory position (Tk).",
        "self.cross_attn(x, memory, memory, memory_mask) (pre-LN: the normalised x as the query).",
    ),
    "mask-misrouted": (
        ERROR,
        "A mask goes to the wrong attention",
        "tgt_mask (B, Tq, Tq) hides decoder keys in self-attention; memory_mask (B, Tq, Tk) hides encoder keys in "
        "cross-attention. Misrouted, they raise when Tq != Tk and hide the wrong keys when Tq == Tk.",
        "self_attn(x, x, x, causal & tgt_mask); cross_attn(x, memory, memory, memory_mask).",
    ),
    "forbidden-builtin": (
        ERROR,
        "A built-in does the exercise for you",
        "The interview asks you to write it by hand.",
        "Replace the call to {name} with your own computation.",
    ),
    "torch-modified": (
        ERROR,
        "Your code changed torch (or the checker) itself",
        "Replacing functions or global settings that the comparison relies on makes every verdict meaningless, "
        "so the check stops here (and puts them back).",
        "Do not assign to attributes of torch, torch.nn.functional, torch.Tensor, builtins or attn_drill, do not "
        "register kernels for torch's own operators (torch.library), and leave torch's global settings (default "
        "dtype, grad mode, modes, global hooks) as they are.",
    ),
    "checker-reached": (
        ERROR,
        "Your code reached into the checker",
        "The checker's reference answers, its cases and its report share your code's process; code that imports "
        "attn_drill, calls its reference or reaches its objects (stack frames, the garbage collector, tracing) "
        "could hand back the expected answer instead of computing it, so the check stops here.",
        "Compute the result from the inputs alone: no attn_drill import, no sys._getframe, inspect.stack, gc or "
        "sys.settrace in the checked file.",
    ),
    "output-reused": (
        ERROR,
        "An output was not computed for this call",
        "Each call must return tensors computed from its own inputs; a tensor returned before for other inputs "
        "(a cache keyed by shape) or one of the checker's own tensors only looks right.",
        "Compute the outputs from this call's arguments every time; cache only what depends on nothing but "
        "the arguments it is keyed by (e.g. a causal mask by its sizes).",
    ),
    "wrong-output-shape": (
        ERROR,
        "An output has the wrong shape",
        "Shapes are part of the contract: later code indexes them.",
        "Make {what} of shape {expected}.",
    ),
    "nan-output": (
        ERROR,
        "NaN or inf in the output",
        "The reference is finite on this case, so something overflowed or divided by zero.",
        "Look for a division by a zero sum, exp of a large number, or a -inf row.",
    ),
    "values-mismatch": (
        ERROR,
        "The numbers do not match the reference",
        "No catalogued mistake explains the difference; the evidence names the first step where your "
        "computation departs from the reference: {step}.",
        "{fix}",
    ),
    "exception": (
        ERROR,
        "Your code raised {type}",
        "The check could not get a result from your code.",
        "Read the message and the line below; run the case yourself with the shapes shown.",
    ),
    "syntax-error": (
        ERROR,
        "The file does not parse",
        "Python could not read the file, so nothing in it could run.",
        "Fix the syntax at the line and column shown (a file that is not UTF-8: re-save it as UTF-8, as shown).",
    ),
    "missing-name": (
        ERROR,
        "{name} is not defined",
        "The checker imports your file and looks for this name.",
        "Define {name} {where}, spelled exactly so.",
    ),
    "wrong-signature": (
        ERROR,
        "{name} cannot be called as the task says",
        "The checker calls it exactly as the contract says: {expected}.",
        "Make the signature {expected}.",
    ),
    "wrong-return-type": (
        ERROR,
        "{name} returns the wrong kind of value",
        "The contract says it returns {expected}.",
        "Return {expected}.",
    ),
    "timeout": (
        ERROR,
        "Your code did not finish in {seconds} s",
        "An endless loop, a blocking read or a huge allocation keeps the check from finishing.",
        "Look for a loop that never ends or input() / sys.stdin reads; rerun with --timeout to allow more.",
    ),
    "crash": (
        ERROR,
        "The process running your code died",
        "A crash (segfault, os._exit, out of memory) ends the check before it can report.",
        "Look at the line shown, if any, and for os._exit, os.kill or abort, huge allocations, or native code "
        "(ctypes).",
    ),
    "internal-error": (
        ERROR,
        "The checker itself failed",
        "This is a bug in attn-drill, not in your code.",
        "Please report it with the file and the seed shown; meanwhile try another --seed.",
    ),
    "input-modified": (
        WARNING,
        "Your code changes its inputs in place",
        "The caller still needs q, k, v (or query, key, value) afterwards; writing into them corrupts that.",
        "Use out-of-place operations (x = x / s, not x /= s or x.div_(s)) on the inputs.",
    ),
    "mask-fill-overflow": (
        WARNING,
        "-1e9 overflows in float16",
        "masked_fill(..., -1e9) raises in float16 (its max is 65504); a real model in half precision would crash.",
        "Fill with float('-inf') or torch.finfo(scores.dtype).min.",
    ),
    "nan-on-empty-row": (
        WARNING,
        "A query with no visible key gives NaN",
        "softmax of an all -inf row is 0/0; PyTorch's SDPA returns zeros there. It is allowed, but NaN spreads through later layers.",
        "Fill with torch.finfo(dtype).min, or zero the rows that are fully masked after the softmax.",
    ),
    "backward-fails": (
        WARNING,
        "Gradients do not flow as they should",
        "A detach, a no_grad block or an in-place write cuts the graph, so training would not learn.",
        "Keep every step differentiable: no .detach(), .item(), numpy round trips or no_grad in forward.",
    ),
    "dtype-not-preserved": (
        WARNING,
        "An output changes dtype",
        "The output should keep the input's dtype ({expected}); callers in half precision expect it.",
        "Create new tensors with dtype=x.dtype, or cast the result back with .to(x.dtype).",
    ),
    "precision-loss": (
        WARNING,
        "Float64 inputs are computed in {dtype}",
        "Computing below the inputs' precision is right for training, but the result is off by ~1e-6 where "
        "float64 promised ~1e-15; a caller who passes float64 wants float64 arithmetic.",
        "Compute in the inputs' dtype: work = torch.promote_types(q.dtype, torch.float32) keeps float64 as float64 "
        "and still lifts half precision to float32.",
    ),
    "device-mismatch": (
        WARNING,
        "A tensor is created on the default device",
        "On a GPU this raises 'Expected all tensors to be on the same device'.",
        "Pass device=x.device (and dtype=x.dtype) when you create tensors, e.g. torch.ones(T, T, device=x.device).",
    ),
}


# values-mismatch's fix, by the kind of step where the computation departs (localise.py names the kinds)
STEP_FIX: dict[str, str] = {
    "projection": "Each input goes through its own layer: q = W_q(query), k = W_k(key), v = W_v(value); check "
                  "which layer and which input each line uses.",
    "head split": "Split heads as view(B, T, H, d).transpose(1, 2): head h owns features [h*d, (h+1)*d) of every "
                  "token.",
    "scores": "Scores are q @ k.transpose(-2, -1): every query against every key, per head, (.., Tq, Tk).",
    "scale": "Divide the scores (not the weights, not the output) by math.sqrt(d), d the last dim of q and k.",
    "mask": "Hide a key with -inf in the scores where the mask is False, before the softmax: "
            "scores.masked_fill(~mask, float('-inf')). A 0 or a small number still leaves it weight.",
    "softmax": "Normalise each query's scores over the keys: softmax(scores, dim=-1), each row summing to 1.",
    "weighted sum": "The output is weights @ v: each query's weights (over the keys) times the values.",
    "merge": "Merge heads as y.transpose(1, 2).reshape(B, T, D): head h back at features [h*d, (h+1)*d).",
    "output projection": "Apply W_o once, to the merged heads (B, T, D), and return that.",
    "frequencies": "Pair i turns at base ** (-2i/d) for i in [0, d/2): inv_freq = base ** (-torch.arange(0, d, 2) / d).",
    "angles": "theta = position * inv_freq for each pair: positions (T,) or (B, T) times (d/2,), then cos and sin.",
    "pairs": "Half-split pairs: dimension i goes with i + d/2 (x1, x2 = x[..., :d/2], x[..., d/2:]).",
    "rotation": "Rotate each pair by +theta: [x1 cos - x2 sin, x2 cos + x1 sin], concatenated on the last axis.",
    "positions": "New tokens sit at T_past .. T_past + T_new - 1: rotate them by those positions.",
    "cache": "Concatenate the past and the new keys/values along time (axis 2) and return the grown cache.",
    "causal mask": "Query i sees key j iff j <= i + (Tk - Tq): bottom-right aligned, the diagonal included.",
    "running max": "Keep each row's running max m = max(m, block max) and shift the block's scores by it.",
    "rescale factor": "When the max rises, scale what was summed so far by exp(m_old - m_new).",
    "block probabilities": "p = exp(block scores - running max): unnormalised, every exponent <= 0.",
    "running sum": "l = l * exp(m_old - m_new) + p.sum(-1): the running denominator, rescaled like acc.",
    "accumulator": "acc = acc * exp(m_old - m_new) + p @ v_block, for every block.",
    "normalisation": "Divide at the end: out = acc / l, with the l of the last block.",
    "max subtraction": "Subtract each slice's own max along dim (keepdim=True), not one max for the whole tensor.",
    "exponentials": "e = exp(x - max): every exponent <= 0, the largest exactly 0.",
    "step": "Recompute that step by hand on the case shown and compare it with your tensor, line by line.",
}
SUBLAYER = "in {sublayer}: {title}"  # a mistake inside a layer's attention sub-layer (encoder- and decoder-layer)


# a layer that never hands a sub-layer its mask: the mask-ignored finding, said of the layer, not of attention
NOT_HANDED_FIX = "Hand the mask on to the sub-layer: {call}."

# wrong-head-merge when whole heads are moved (reversed, shuffled), not interleaved with time steps
HEADS_MOVED = ("Heads are merged out of order",
               "Each head must return to its own features: head h to [h*d, (h+1)*d), in order.",
               "Concatenate the heads in order 0..H-1: torch.cat(heads, dim=-1), or "
               "y.transpose(1, 2).reshape(B, T, D)  # (B, H, T, d) -> (B, T, H, d) -> (B, T, D).")

# mask-head-broadcast when heads were flattened to (B*H) for bmm and the mask tiled head-major
MASK_TILED_FIX = ("Tile the mask the way the heads were flattened, batch-major: "
                  "mask.repeat_interleave(H, dim=0)  # (B*H, Tq, Tk), row b*H + h is sequence b's mask.")


def in_sublayer(finding: Finding, sublayers: list[str], evidence: str) -> Finding:
    """The finding of a mistake inside an attention sub-layer, said of that sub-layer: "in cross_attn: the
    mask is broadcast without a head axis"; `evidence` comes first, the sub-layer's own evidence after it."""
    title = finding.title[:1].lower() + finding.title[1:]
    finding.title = SUBLAYER.format(sublayer=" and ".join(sublayers), title=title)
    finding.evidence = f"{evidence}: {finding.evidence}" if finding.evidence else evidence
    return finding


def without_sublayer(title: str) -> str:
    """The title as the table words it, without in_sublayer's "in self_attn: " (a choice beside other titles)."""
    head, sep, rest = title.partition(": ")
    if sep and head.startswith("in ") and head.endswith("_attn"):
        return rest[:1].upper() + rest[1:]
    return title


class _Params(dict):
    def __missing__(self, key: str) -> str:  # a missing parameter never breaks the wording
        return "{" + key + "}"


def make(slug: str, evidence: str = "", *, line: int | None = None, score: float = 0.0,
         picture: dict | None = None, level: str | None = None, **params) -> Finding:
    """Build a finding for `slug` with its wording filled in from `params`.

    `level` overrides the slug's usual level, for the rare warning that turns out to explain a failure."""
    default_level, title, why, fix = WORDING[slug]
    level = level or default_level
    p = _Params({"where": "at the top level of the file"} | params)
    return Finding(
        slug=slug,
        level=level,
        title=title.format_map(p),
        message=why.format_map(p),
        evidence=evidence,
        fix=fix.format_map(p),
        line=line,
        score=score,
        picture=picture,
    )
