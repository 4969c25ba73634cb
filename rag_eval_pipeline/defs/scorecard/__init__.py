"""The scorecard: `evaluation_scorecard`, `metric_regressions`, their checks, the alert sensor.

Its assets take the evaluation defaults (`defs.shared.assets`) and the group `7_scorecard`.
"""

from rag_eval_pipeline.defs.shared.assets import evaluation_asset

asset = evaluation_asset("7_scorecard")
