"""The asset checks of `traffic_judgments`."""

from rag_eval_pipeline.defs.shared.judge_checks import judge_error_rate_check

traffic_judgments_error_rate = judge_error_rate_check("traffic_judgments")
