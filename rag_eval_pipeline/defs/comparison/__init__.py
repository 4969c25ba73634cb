"""The A/B comparison of two systems under test: `system_comparison`.

Its assets take the evaluation defaults (`defs.shared.assets`) and the group `8_comparison`.
"""

from rag_eval_pipeline.defs.shared.assets import evaluation_asset

asset = evaluation_asset("8_comparison")
