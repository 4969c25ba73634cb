"""The judges tier: judge reliability, judge-corrected quality, show/hide judge, rater export.

Its assets take the evaluation defaults (`defs.shared.assets`) and the group `5_judges`.
"""

from rag_eval_pipeline.defs.shared.assets import evaluation_asset

asset = evaluation_asset("5_judges")
