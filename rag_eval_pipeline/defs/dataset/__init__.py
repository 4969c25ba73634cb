"""The golden dataset tier: `golden_dataset`, the dataset-version sensor, the daily schedule.

Its assets take the evaluation defaults (`defs.shared.assets`) and the group `0_dataset`.
"""

from rag_eval_pipeline.defs.shared.assets import evaluation_asset

asset = evaluation_asset("0_dataset")
