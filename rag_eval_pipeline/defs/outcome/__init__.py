"""What a finished run found and cost: the summary `rag-eval run` prints (alerts, failed checks,
LLM usage) and the cost tags of every run (`run_cost_sensor`)."""
