"""The UX tier: semantic cache and multi-turn metrics.

Its assets take the evaluation defaults (`defs.shared.assets`) and the group `6_ux`.
"""

from rag_eval_pipeline.defs.shared.assets import evaluation_asset

asset = evaluation_asset("6_ux")
