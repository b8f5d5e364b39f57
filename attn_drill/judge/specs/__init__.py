"""What the checker knows about each exercise: its API, its cases, how to call user and reference code.

One module per exercise; `SPECS` maps catalogue ids to them.
"""

from attn_drill.judge.specs.alibi import AlibiSpec
from attn_drill.judge.specs.attention_backward import AttentionBackwardSpec
from attn_drill.judge.specs.flash import FlashSpec
from attn_drill.judge.specs.gqa import GQASpec
from attn_drill.judge.specs.kv_cache import KVCacheSpec
from attn_drill.judge.specs.layers import DecoderLayerSpec, EncoderLayerSpec
from attn_drill.judge.specs.linear_attention import LinearAttentionSpec
from attn_drill.judge.specs.llama_block import LlamaBlockSpec
from attn_drill.judge.specs.masks import MasksSpec
from attn_drill.judge.specs.mha import MHASpec
from attn_drill.judge.specs.mha_dims import MHADimsSpec
from attn_drill.judge.specs.mha_fused import FusedSpec
from attn_drill.judge.specs.mla import MLASpec
from attn_drill.judge.specs.paged_attention import PagedAttentionSpec
from attn_drill.judge.specs.relative_position import RelPosSpec
from attn_drill.judge.specs.rope import RopeSpec
from attn_drill.judge.specs.sdpa import SDPASpec
from attn_drill.judge.specs.self_attention import SingleHeadSpec
from attn_drill.judge.specs.sliding_window import SlidingWindowSpec
from attn_drill.judge.specs.softmax import SoftmaxSpec

SPECS = {spec.id: spec for spec in (SDPASpec(), MHASpec(), FusedSpec(), GQASpec(), SoftmaxSpec(), MasksSpec(), RopeSpec(),
                                    KVCacheSpec(), FlashSpec(), SingleHeadSpec(), MHADimsSpec(), RelPosSpec(),
                                    EncoderLayerSpec(), DecoderLayerSpec(), SlidingWindowSpec(), LlamaBlockSpec(),
                                    MLASpec(), AlibiSpec(), LinearAttentionSpec(),
                                    AttentionBackwardSpec(), PagedAttentionSpec())}
