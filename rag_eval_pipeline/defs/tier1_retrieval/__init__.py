"""Tier 1, retrieval: runs of every retriever, per-query IR metrics, per-system quality.

Its assets take the evaluation defaults (`defs.shared.assets`) and the group `2_retrieval`.
"""

from rag_eval_pipeline.defs.shared.assets import evaluation_asset

asset = evaluation_asset("2_retrieval")
