"""The asset checks of `e2e_judgments`."""

from rag_eval_pipeline.defs.shared.judge_checks import judge_error_rate_check

e2e_judgments_error_rate = judge_error_rate_check("e2e_judgments")
