"""`python -m rag_eval_pipeline.cli`: the `rag-eval` command."""

from rag_eval_pipeline.cli import run_and_exit

run_and_exit()
