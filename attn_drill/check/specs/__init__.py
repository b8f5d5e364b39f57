"""What the checker knows about each exercise: its API, its cases, how to call user and reference code.

One module per exercise; `SPECS` maps catalogue ids to them.
"""

from attn_drill.check.specs.mha import MHASpec
from attn_drill.check.specs.sdpa import SDPASpec

SPECS = {spec.id: spec for spec in (SDPASpec(), MHASpec())}
