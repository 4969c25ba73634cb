"""The traffic tier: production traffic day by day, its judgments and quality; the judge check.

Its assets take the evaluation defaults (`defs.shared.assets`) and the group `6_traffic`.
"""

from rag_eval_pipeline.defs.shared.assets import evaluation_asset

asset = evaluation_asset("6_traffic")
