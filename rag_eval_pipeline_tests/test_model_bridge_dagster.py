"""The model bridge through Dagster: `metric_regressions` materialized on a real instance over two
dates of a 20-question version, judged by loopback judge A on the first and B (+0.1 on answer
relevance) on the second, one loopback generator on both.

No change in the system: nothing is alerted, the bridge reports B − A = +0.1 and the run's LLM
usage lists the bridge's re-judging. A real 10% drop of the corpus under B: the drop is alerted
in Tiers 2 and 3, and the bridge's calls (not cached this time) are in the run's calls and cost.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from dagster import AssetSelection, DagsterInstance, materialize

from rag_eval_pipeline.definitions import ALL_ASSETS
from rag_eval_pipeline.defs.outcome.summary import partition_summary, run_llm_usage, usage_line
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.verdicts.wording import NOT_COMPARABLE, REGRESSED
from rag_eval_pipeline.storage.warehouse import WarehouseStore
from rag_eval_pipeline.systems import REFERENCE_RAG
from rag_eval_pipeline_tests.conftest import evaluation_resources, loopback_llm
from rag_eval_pipeline_tests.openai_server import run_openai_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VERSION, DAY1, DAY2 = "bridged", "2026-11-20", "2026-11-21"
N, SHIFT, METRIC = 20, 0.1, "avg_answer_relevance"
TOPICS = (
    "billing invoices", "object storage", "load balancers", "DNS zones", "GPU quotas",
    "backup snapshots", "firewall rules", "container registry", "message queues", "CDN caching",
    "SSH keys", "VPN tunnels", "log retention", "status page", "support tiers",
    "data residency", "API tokens", "autoscaling groups", "database replicas", "email relay",
)  # fmt: skip
QUALITY = re.compile(r"quality (\d\.\d+)")
SELECTION = AssetSelection.assets("metric_regressions").upstream()


def write_version(folder: Path, qualities: np.ndarray) -> None:
    """One document per topic stating its quality, one question per topic, its document the
    relevant one."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"doc_id": f"d{i}", "text": f"The {topic} service has quality {q:.4f}."})
            + "\n"
            for i, (topic, q) in enumerate(zip(TOPICS, qualities, strict=True))
        )
    )
    (folder / "queries.jsonl").write_text(
        "".join(
            json.dumps({"query_id": f"q{i}", "question": f"What quality has the {topic} service?"})
            + "\n"
            for i, topic in enumerate(TOPICS)
        )
    )
    (folder / "qrels.csv").write_text(
        "query_id,doc_id,relevance\n" + "".join(f"q{i},d{i},1\n" for i in range(N))
    )


def generator(request: dict[str, Any]) -> str:
    """Answers with the quality its first context passage states."""
    context = request["messages"][-1]["content"].split("<context>")[-1]
    return f"The service has quality {QUALITY.search(context).group(1)}."


def judge_adding(shift: float):
    """Answer relevance: the quality the answer states, plus `shift`; every other judge prompt a
    fixed, valid reply (all claims supported, coherence 4, the answer's own question)."""

    def respond(request: dict[str, Any]) -> str:
        system, user = (m["content"] for m in request["messages"])
        if '"supported"' in system:
            return json.dumps({"claims": [{"claim": "the quality", "supported": True}]})
        if '"noncommittal"' in system:
            return json.dumps({"questions": ["What quality has it?"], "noncommittal": False})
        if "coherence" in system:
            return json.dumps({"score": 4, "reason": "organized"})
        answer = user.split("<answer>")[-1]
        score = float(QUALITY.search(answer).group(1)) + shift
        return json.dumps({"score": round(score, 4), "reason": "known"})

    return respond


def test_a_judge_change_through_dagster(
    tmp_path: Path, embedder: Embedder, dagster_instance: DagsterInstance
) -> None:
    qualities = np.random.default_rng(0).uniform(0.3, 0.8, N)
    datasets = tmp_path / "datasets"
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, [VERSION])
    with (
        run_openai_server(responder=generator) as generator_server,
        run_openai_server(responder=judge_adding(0.0)) as server_a,
        run_openai_server(responder=judge_adding(SHIFT)) as server_b,
    ):
        generator_llm = loopback_llm(generator_server.base_url, "openai/gpt-4o-mini", tmp_path)

        def run(day: str, server, cache: str) -> tuple[pd.DataFrame, Any]:
            judge = loopback_llm(server.base_url, "openai/gpt-4o-mini", tmp_path / cache)
            result = materialize(
                ALL_ASSETS,
                selection=SELECTION,
                partition_key=evaluation_partition_key(VERSION, day),
                instance=dagster_instance,
                resources=evaluation_resources(
                    tmp_path,
                    embedder,
                    datasets=DatasetsResource(root=str(datasets)),
                    judge_llm=judge,
                    generator_llm=generator_llm,
                ),
            )
            assert result.success
            verdicts = result.output_for_node("metric_regressions")
            return verdicts.set_index(["tier", "system", "metric"]), result

        write_version(datasets / VERSION, qualities)
        run(DAY1, server_a, "a")

        # day 2, judge B, the same system: the baseline re-judged by B (its reply cache already
        # holds these prompts: the same answers were judged today)
        verdicts, result = run(DAY2, server_b, "b")
        assert not verdicts["alert"].any(), verdicts[verdicts["alert"]]["reason"]
        keys = [
            ("tier2_generation", "openai/gpt-4o-mini", METRIC),
            ("tier3_e2e", REFERENCE_RAG, METRIC),
        ]
        for key in keys:
            assert verdicts.loc[key, "verdict"] != NOT_COMPARABLE
            assert verdicts.loc[key, "n_paired"] == N
            assert (
                f"the change alone moved it +{SHIFT:.4f} on {N} items"
                in verdicts.loc[key, "reason"]
            )
        metadata = result.asset_materializations_for_node("metric_regressions")[0].metadata
        bridge = metadata["model_bridge"].value
        assert (
            f"| judge | stored answers re-scored | tier3_e2e | {REFERENCE_RAG} | {METRIC} |"
            in bridge
        )
        assert metadata["bridge_judge_calls"].value == 0
        assert metadata["bridge_judge_cache_hits"].value > 0
        usage = run_llm_usage(dagster_instance, result.run_id)
        assert set(usage["role"]) == {"judge", "generator", "bridge_judge"}
        assert "the model bridge: 0 calls" in usage_line(usage)

        # the same day again with a real 10% drop of what the corpus states, under B, from a
        # fresh reply cache: the bridge pays for its calls this time
        write_version(datasets / VERSION, 0.9 * (qualities + SHIFT) - SHIFT)
        sent = len(server_b.requests)
        verdicts, result = run(DAY2, server_b, "b-fresh")
        for key in keys:
            assert verdicts.loc[key, "verdict"] == REGRESSED and verdicts.loc[key, "alert"]
            assert verdicts.loc[key, "relative_change"] == pytest.approx(-0.10, abs=2e-3)
        usage = run_llm_usage(dagster_instance, result.run_id).set_index(["asset", "role"])
        bridge_calls = usage.loc[("metric_regressions", "bridge_judge"), "calls"]
        judge_calls = usage.xs("judge", level="role")["calls"].sum()
        assert bridge_calls > 0
        assert judge_calls + bridge_calls == len(server_b.requests) - sent
        assert usage.loc[("metric_regressions", "bridge_judge"), "cost_usd"] > 0
        assert f"(the model bridge: {bridge_calls} calls, " in usage_line(usage.reset_index())
        store = WarehouseStore(str(tmp_path / "warehouse"))
        summary = partition_summary(dagster_instance, store, VERSION, DAY2, result.run_id)
        assert summary.n_alerts >= len(keys)
        assert usage_line(usage.reset_index()) in summary.lines  # what `rag-eval run` prints
