"""The asset checks of `generation_judgments`."""

from rag_eval_pipeline.defs.shared.judge_checks import judge_error_rate_check

generation_judgments_error_rate = judge_error_rate_check("generation_judgments")
