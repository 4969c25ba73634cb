"""The Dagster concurrency pools that bound LLM traffic across all runs of an instance.

A pool limits *steps* in flight, not HTTP requests: every asset that calls the judge LLM takes a
slot of `LLM_JUDGE_POOL` for the whole step, every asset that calls the generator LLM one of
`LLM_GENERATOR_POOL`, and within a step the LLM client keeps at most `max_concurrency` requests in
flight. So all runs together send at most ``pool limit × max_concurrency`` requests to a judge at
once. The limit is the instance's ``concurrency: pools: default_limit`` (shipped `dagster.yaml`
and `deploy/`), or ``dagster instance concurrency set llm_judge N`` for this pool alone.
"""

LLM_JUDGE_POOL = "llm_judge"
LLM_GENERATOR_POOL = "llm_generator"
