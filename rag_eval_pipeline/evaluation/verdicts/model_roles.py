"""Which metrics each model (judge, generator, embedder) feeds, and which models changed.

A change of a model makes the metrics it feeds incomparable with the baseline unless the
baseline was rebuilt with today's model (`evaluation.model_bridge`).
"""

from __future__ import annotations

from collections.abc import Mapping

from rag_eval_pipeline.systems import REFERENCE_RAG
from rag_eval_pipeline.systems.retrievers import DENSE, HYBRID

IDENTITY_ROLES = ("judge", "generator", "embedder")
# Which tiers each model's output feeds: a change of that model makes their metrics incomparable.
ROLE_TIERS: dict[str, frozenset[str]] = {
    "judge": frozenset({"tier2_generation", "tier3_e2e", "judge_reliability", "show_judge"}),
    "generator": frozenset({"tier2_generation", "tier3_e2e", "ux"}),
    "embedder": frozenset(
        {"tier0_embedding", "tier1_retrieval", "tier2_generation", "tier3_e2e", "ux"}
    ),
}
# Tiers of which a model feeds only the rows of the pipeline's own systems: the built-in
# reference RAG (`systems.rag`) and, for the embedder, the dense and hybrid reference retrievers
# of Tier 1. The dataset's runs, a callable system's and logged answers are made without the
# pipeline's embedder and generator (Tier 3's scores of them use the embedder, not the generator).
ROLE_REFERENCE_TIERS: dict[str, dict[str, frozenset[str]]] = {
    "generator": {"tier3_e2e": frozenset({REFERENCE_RAG})},
    "embedder": {"tier1_retrieval": frozenset({REFERENCE_RAG, DENSE, HYBRID})},
}
# Tiers only some of whose metrics a model feeds: the traffic tier's judged sample (its
# latency, errors, cost and feedback come from the logs, whatever the judge).
ROLE_TIER_METRICS: dict[str, dict[str, frozenset[str]]] = {
    "judge": {"traffic": frozenset({"avg_faithfulness", "avg_answer_relevance"})},
    # the offline judge reads embeddings; context relevance is a cosine
    "embedder": {
        "traffic": frozenset({"avg_faithfulness", "avg_answer_relevance", "avg_context_relevance"})
    },
}


def model_feeds(role: str, tier: str, system: str, metric: str) -> bool:
    """Whether the `role` model's output goes into `metric` of `system` in `tier` (its change
    makes the metric incomparable with the baseline)."""
    own_systems = ROLE_REFERENCE_TIERS.get(role, {}).get(tier)
    if own_systems is not None:
        return system in own_systems
    partial = ROLE_TIER_METRICS.get(role, {}).get(tier, frozenset())
    return tier in ROLE_TIERS[role] or metric in partial


def changed_roles(
    current: Mapping[str, str | None], baseline: Mapping[str, str | None]
) -> dict[str, str]:
    """Role → "old → new" for every model whose identity differs (unknown ones are skipped)."""
    changed = {}
    for role in IDENTITY_ROLES:
        old, new = baseline.get(role), current.get(role)
        if old and new and old != new:
            changed[role] = f"{old} → {new}"
    return changed
