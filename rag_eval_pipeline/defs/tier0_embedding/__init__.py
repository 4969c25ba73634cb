"""Tier 0, embedding: `corpus_embeddings` and `embedding_quality`.

Its assets take the evaluation defaults (`defs.shared.assets`) and the group `1_embedding`.
"""

from rag_eval_pipeline.defs.shared.assets import evaluation_asset

asset = evaluation_asset("1_embedding")
