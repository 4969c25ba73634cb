"""Tier 1 on the system under test: the documents it retrieved with its Tier 3 answers.

Kept beside `retrieval_tier` rather than inside it, so the Tier 1 slice (reference retrievers,
shipped runs, real users) never waits for, nor needs, the system under test to answer.
Rows are labeled `tier1_retrieval` and named after the system, like every other Tier 1 system.
"""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue

from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.shared.metadata import markdown_table
from rag_eval_pipeline.defs.tier1_retrieval.assets import summarized_retrieval
from rag_eval_pipeline.defs.tier3_e2e import asset
from rag_eval_pipeline.evaluation.retrieval import evaluate_system_under_test, unknown_doc_ids
from rag_eval_pipeline.text.escaping import terminal_text


@asset(
    description=(
        "Per-query Tier 1 metrics (trec_eval semantics, the version's qrels) of the documents "
        "the system under test retrieved with its answers, in the order it returned them. "
        "Retrieved ids that are not in the corpus are counted and listed in the metadata."
    ),
)
def system_retrieval_metrics(
    context: AssetExecutionContext,
    golden_dataset: DatasetTables,
    e2e_generations: pd.DataFrame,
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    run, per_query = evaluate_system_under_test(
        e2e_generations, dataset.qrels, relevance_level=dataset.relevance_level
    )
    metadata: dict[str, object] = {
        "n_rows": MetadataValue.int(len(per_query)),
        "n_retrieved": MetadataValue.int(len(run)),
    }
    if dataset.corpus is not None:
        unknown = unknown_doc_ids(run, set(dataset.corpus["doc_id"]))
        for row in unknown[unknown["n_unknown"] > 0].itertuples():
            context.log.warning(
                terminal_text(
                    f"system under test {row.system!r} retrieved {row.n_unknown} id(s) not in "
                    f"the corpus, scored as not relevant; e.g. {row.examples}"
                )
            )
        metadata["n_unknown_doc_ids"] = MetadataValue.int(int(unknown["n_unknown"].sum()))
        metadata["unknown_doc_ids"] = MetadataValue.md(markdown_table(unknown))
    context.add_output_metadata(metadata)
    return per_query


@asset(
    description=(
        "Mean, std, count and 95% bootstrap CI of every Tier 1 metric of the system under "
        "test's own retrieval (scorecard tier `tier1_retrieval`, system = its name)."
    ),
)
def system_retrieval_quality(
    context: AssetExecutionContext, system_retrieval_metrics: pd.DataFrame
) -> pd.DataFrame:
    return summarized_retrieval(context, system_retrieval_metrics)
