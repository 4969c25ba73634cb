"""A run that judges through the `llm_judge` pool, one process each (`test_postgres_instance.py`).

``python -m rag_eval_pipeline_tests.pool_worker BASE_URL LABEL N CONCURRENCY`` materializes one
asset in the `llm_judge` concurrency pool on the instance of ``$DAGSTER_HOME``; the asset sends N
distinct prompts to the loopback judge at BASE_URL through the project's `LLMResource`, at most
CONCURRENCY in flight. Exits 0 when every prompt got a reply.
"""

import sys

from dagster import AssetExecutionContext, DagsterInstance, asset, materialize

from rag_eval_pipeline.defs.runs.pools import LLM_JUDGE_POOL
from rag_eval_pipeline.defs.shared.resources import LLMResource


def main() -> int:
    base_url, label, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

    @asset(pool=LLM_JUDGE_POOL, name=f"pooled_judgments_{label}")
    def pooled_judgments(context: AssetExecutionContext, judge_llm: LLMResource) -> int:
        client = judge_llm.client()
        prompts = [[{"role": "user", "content": f"{label} #{i}"}] for i in range(n)]
        replies = client.complete_many(prompts, use_cache=False)
        return sum(reply.error is None for reply in replies)

    judge = LLMResource(
        model="openai/pooled-judge",
        api_base=base_url,
        api_key="sk-test",
        max_concurrency=int(sys.argv[4]),
        cache_dir=sys.argv[5],
    )
    with DagsterInstance.get() as instance:
        result = materialize([pooled_judgments], instance=instance, resources={"judge_llm": judge})
    answered = result.output_for_node(f"pooled_judgments_{label}")
    return 0 if result.success and answered == n else 1


if __name__ == "__main__":
    sys.exit(main())
