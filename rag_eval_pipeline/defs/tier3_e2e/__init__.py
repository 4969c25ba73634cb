"""Tier 3, end to end: the system under test's answers and retrieval, judgments, quality.

Its assets take the evaluation defaults (`defs.shared.assets`) and the group `4_end_to_end`.
"""

from rag_eval_pipeline.defs.shared.assets import evaluation_asset

asset = evaluation_asset("4_end_to_end")
