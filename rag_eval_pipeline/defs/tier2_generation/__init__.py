"""Tier 2, generation: ideal-context generations, their judgments and quality; the judge check.

Its assets take the evaluation defaults (`defs.shared.assets`) and the group `3_generation`.
"""

from rag_eval_pipeline.defs.shared.assets import evaluation_asset

asset = evaluation_asset("3_generation")
