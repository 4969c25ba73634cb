"""The run machinery beneath every tier: the evaluation job, one run per partition, run
ownership, up-to-date skipping, the LLM pools, machine failures. Imports no other `defs` folder."""
