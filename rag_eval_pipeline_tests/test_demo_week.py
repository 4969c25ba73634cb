"""The demo's week: traffic replay, the staged change, `rag-eval run --days`, the terminal
scorecard and the report's "What changed" grouping."""

from __future__ import annotations

import re
import shlex
import subprocess
from datetime import UTC, date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import time_machine
from dagster import DagsterInstance, materialize

from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.datasets.manifest import DatasetManifest, read_manifest
from rag_eval_pipeline.defs.dataset.assets import golden_dataset
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.tier3_e2e.assets import e2e_generations
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.traffic import day_interactions
from rag_eval_pipeline.reporting.changes import changes_by_section, roles, week_summary
from rag_eval_pipeline.reporting.day_lines import DAY_LINE, DayOrder
from rag_eval_pipeline.reporting.html_report import sparkline_svg
from rag_eval_pipeline.reporting.terminal import (
    filtered,
    scorecard_lines,
    shorten_end,
    shorten_middle,
)
from rag_eval_pipeline.systems.staged_change import lost_answers_corpus, questions_hit
from rag_eval_pipeline_tests.conftest import (
    DATASETS_DIR,
    deployment_env,
    evaluation_resources,
    rag_eval,
)
from rag_eval_pipeline_tests.flips import write_version

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LOGS = pd.DataFrame(
    {
        "log_id": ["a", "b", "c"],
        "timestamp": pd.to_datetime(
            ["2026-11-02T08:14:37Z", "2026-11-05T23:30:00Z", "2026-11-09T00:10:00Z"], utc=True
        ),
    }
)


def test_replayed_logs_fall_on_any_date_at_their_time_of_day() -> None:
    day = date(2031, 2, 28)
    replayed = day_interactions(LOGS, day, "UTC", replay=True)
    assert replayed["log_id"].tolist() == ["c", "a", "b"]  # in time-of-day order
    assert [t.isoformat() for t in replayed["timestamp"]] == [
        "2031-02-28T00:10:00+00:00",
        "2031-02-28T08:14:37+00:00",
        "2031-02-28T23:30:00+00:00",
    ]
    assert day_interactions(LOGS, day, "UTC").empty  # without replay: their real dates
    paris = day_interactions(LOGS, day, "Europe/Paris", replay=True)
    assert len(paris) == 3  # 23:30 UTC is 00:30 in Paris: still on the replayed day
    assert {t.tz_convert("Europe/Paris").date() for t in paris["timestamp"]} == {day}


def test_the_staged_change_drops_the_answers_of_a_seeded_fraction() -> None:
    qrels = pd.DataFrame(
        {
            "query_id": [f"q{i}" for i in range(20)] + ["q0"],
            "doc_id": [f"d{i}" for i in range(20)] + ["shared"],
        }
    )
    corpus = pd.DataFrame({"doc_id": [f"d{i}" for i in range(30)] + ["shared"]})
    kept, hit = lost_answers_corpus(corpus, qrels, 0.15)
    assert len(hit) == 3 and hit == questions_hit(qrels["query_id"][::-1], 0.15)
    lost = set(qrels.loc[qrels["query_id"].isin(hit), "doc_id"])
    assert set(corpus["doc_id"]) - set(kept["doc_id"]) == lost
    manifest = DatasetManifest(staged_change_days_ago=3, staged_change_drop=0.15)
    active = [manifest.change_active(f"2026-11-{d}", "2026-11-24") for d in range(18, 25)]
    assert active == [False, False, False, True, False, False, False]
    assert not DatasetManifest().change_active("2026-11-21", "2026-11-24")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("traffic_replay: yes please\n", "must be true or false"),
        ("traffic_every_day: sometimes\n", "must be true or false"),
        ("staged_change_days_ago: 0\n", "number of days from 1 to 365"),
        ("staged_change_drop: 1.5\n", "fraction of questions in (0, 1]"),
    ],
)
def test_bad_demo_settings_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "dataset.yaml").write_text(text)
    _, issues = read_manifest(tmp_path)
    assert len(issues) == 1 and message in str(issues[0])


def test_the_shipped_demo_versions_replay_traffic_and_stage_one_change() -> None:
    root = Path(__file__).resolve().parents[1] / "data" / "datasets"
    v1, v2 = (read_manifest(root / name)[0] for name in ("demo-v1", "demo-v2"))
    assert v1.traffic_replay and v2.traffic_replay
    assert v1.staged_change_days_ago is None
    assert (v2.staged_change_days_ago, v2.staged_change_drop) == (3, 0.15)
    assert DatasetManifest.from_frame(v2.to_frame()) == v2


def scorecard(rows: int = 3) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "dataset_version": "v1",
            "date": "2026-11-24",
            "tier": ["tier1_retrieval"] * (rows - 1) + ["judge_reliability"],
            "system": ["a-very-long-system-name-from-a-dataset-file", "bm25", "judge"][:rows],
            "metric": ["weighted_kappa_faithfulness_judge_vs_rater_a", "mrr", "kappa"][:rows],
            "value": [0.5, 12345.678, np.nan][:rows],
            "ci_low": [0.4, 12000.0, np.nan][:rows],
            "ci_high": [0.6, 13000.0, np.nan][:rows],
            "count": [56, 1_234_567, 10][:rows],
            "band": ["needs attention", None, "good"][:rows],
        }
    )


def test_the_terminal_scorecard_fits_100_columns_grouped_by_version_and_tier() -> None:
    lines = scorecard_lines(scorecard())
    assert max(len(line) for line in lines) <= 100
    assert lines[0] == "v1 · 2026-11-24"
    assert [line.split()[1] for line in lines if line.startswith("── ")] == [
        "tier1_retrieval",
        "judge_reliability",
    ]
    row = next(line for line in lines if "a-very-long" in line)
    assert "a-very-long-system-na… weighted_kapp…ge_vs_rater_a " in row  # both ends kept
    assert "12,346" in next(line for line in lines if " bm25 " in line)
    assert shorten_end("abcdef", 4) == "abc…" and shorten_middle("abcdefgh", 5) == "ab…gh"
    assert filtered(scorecard(), ["TIER1"], ["BM"])["system"].tolist() == ["bm25"]
    assert len(filtered(scorecard(), ["judge"])) == 1 and len(filtered(scorecard())) == 3


def verdicts() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "tier": ["tier1_retrieval", "tier1_retrieval", "traffic", "ux", "tier3_e2e"],
            "system": ["s"] * 5,
            "metric": ["mrr", "recall@10", "volume", "cache_hit_rate", "avg_e2e_score"],
            "verdict": ["regressed", "regressed", "not comparable", "untestable", "improved"],
            "alert": [True, True, True, False, False],
            "relative_change": [-0.1, -0.5, np.nan, 0.2, 0.1],
            "baseline_date": ["2026-11-23"] * 5,
            "q_value": [0.00064, 0.001, np.nan, np.nan, 0.01],
            "n_paired": [76] * 5,
            "test": ["sign-flip"] * 5,
        }
    )


def test_changes_are_grouped_by_verdict_kind_primary_first() -> None:
    sections = changes_by_section(verdicts(), ["mrr", "avg_e2e_score"])
    assert list(sections) == [
        "Regressions",
        "Outages and missing metrics",
        "Untestable changes",
        "Improvements",
    ]
    assert sections["Regressions"]["metric"].tolist() == ["mrr", "recall@10"]  # primary first
    assert sections["Regressions"]["role"].tolist() == ["primary", "secondary"]
    assert sections["Regressions"]["where"].iloc[0] == "retrieval_metrics"
    with_roles = verdicts().assign(role=["secondary", "primary", None, None, None])
    assert roles(with_roles, ["mrr"]).tolist()[:2] == ["secondary", "primary"]
    new_kind = verdicts().assign(verdict=["effect only", *verdicts()["verdict"][1:]])
    assert "Outages and missing metrics" in changes_by_section(new_kind, [])
    quiet = verdicts().assign(alert=False, verdict="no significant change")
    week = week_summary({"2026-11-22": quiet, "2026-11-21": verdicts()}, ["mrr"])
    assert week["date"].tolist() == ["2026-11-21", "2026-11-22"]
    assert week[["regressions", "outages", "improvements"]].to_numpy().tolist() == [
        [2, 1, 1],
        [0, 0, 0],
    ]
    assert week.loc[0, "largest"] == ("s mrr −10.0% (q = 0.00064, n = 76) → retrieval_metrics")


def test_a_sparkline_is_inline_svg_with_the_regression_marked() -> None:
    svg = sparkline_svg([0.8, 0.8, 0.6, 0.8], [False, False, True, False], "mrr <x>")
    assert svg.startswith("<svg") and svg.count("<circle") == 1 and "mrr &lt;x&gt;" in svg
    assert "<svg" not in sparkline_svg([0.5], [False], "one point")


def test_day_lines_of_processes_side_by_side_come_out_in_date_order() -> None:
    printed: list[str] = []
    order = DayOrder(2, printed.append)
    order.line(0, "materializing ...\n")  # before a process's first day: through at once
    order.line(0, "2026-11-20  a: first evaluation\n")
    order.line(0, "2026-11-21  a: quiet\n")
    order.line(0, "a|2026-11-21: needs a look\n")
    assert printed == ["materializing ...\n"]  # process 1 may still print 2026-11-20
    order.line(1, "2026-11-20  b: first evaluation\n")
    order.line(1, "2026-11-21  b: quiet\n")
    order.end(0)
    order.end(1)
    assert printed == [
        "materializing ...\n",
        "2026-11-20  a: first evaluation\n",
        "2026-11-20  b: first evaluation\n",
        "2026-11-21  a: quiet\n",
        "a|2026-11-21: needs a look\n",
        "2026-11-21  b: quiet\n",
    ]


def test_run_days_evaluates_a_week_in_order_and_ends_with_the_report(tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    misses = {"drop": set(range(12)), "same": set(range(12))}
    write_version(data / "datasets" / "flips", misses)
    write_version(data / "datasets" / "flops", misses)
    refused = rag_eval(
        data, home, "run", "--select", "retrieval_metrics", "--days", "2", exit_code=2
    )
    assert refused.count("\n") == 1 and "select its upstream too" in refused
    out = rag_eval(data, home, "run", "--days", "2", "--parallel", "2")
    every_day = [line.split()[0] for line in out.splitlines() if DAY_LINE.match(line)]
    assert len(every_day) == 4 and every_day == sorted(every_day), out
    for version in ("flips", "flops"):  # one process each, dates in order, lines whole
        lines = [line for line in out.splitlines() if line.startswith("20") and version in line]
        days = [line.split()[0] for line in lines]
        assert len(days) == 2 and days == sorted(days), out
        assert f"{version}: first evaluation: no baseline yet" in lines[0]
        assert f"{version}: quiet: no significant change since {days[0]}" in lines[1]
        assert f"reports/{version}/{days[1]}.html" in out
    assert out.rstrip().endswith("the asset graph and the plots over dates")
    hint = next(line for line in out.splitlines() if "scorecard --tier tier1" in line)
    command = shlex.split(re.split(r"\s{2,}", hint.strip())[0])  # runnable as printed
    printed = subprocess.run(
        command, env=deployment_env(data, home), cwd=data, capture_output=True, text=True
    )
    assert printed.returncode == 0 and "tier1_retrieval" in printed.stdout, hint
    card = rag_eval(data, home, "scorecard", "--tier", "tier1", "--system", "drop")
    assert max(len(line) for line in card.splitlines()) <= 100
    assert " drop " in card and " same " not in card


def test_the_staged_change_reaches_the_system_on_its_day_only(
    tmp_path: Path, dagster_instance: DagsterInstance, embedder: Embedder, pinned_today: str
) -> None:
    """demo-v2's reference RAG, materialized through Dagster on the staged day and the day
    before: on the staged day its retrieved documents lack the lost ones, and only then. The
    clock has passed midnight UTC when they are evaluated: the dates hold (`pinned_today`)."""
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["demo-v2"])
    today = pd.Timestamp(pinned_today)
    staged, before = ((today - pd.Timedelta(days=d)).strftime("%Y-%m-%d") for d in (3, 4))
    outputs = {}
    for day in (staged, before):
        with time_machine.travel(today.tz_localize(UTC) + pd.Timedelta(days=1, seconds=1)):
            result = materialize(
                [golden_dataset, e2e_generations],
                partition_key=evaluation_partition_key("demo-v2", day),
                instance=dagster_instance,
                resources=evaluation_resources(tmp_path, embedder),
            )
        metadata = result.asset_materializations_for_node("e2e_generations")[0].metadata
        outputs[day] = (result.output_for_node("e2e_generations"), metadata)
    dataset = load_dataset(DATASETS_DIR / "demo-v2")
    _, hit = lost_answers_corpus(dataset.corpus, dataset.relevant_qrels, 0.15)
    lost = set(dataset.relevant_qrels.loc[dataset.relevant_qrels["query_id"].isin(hit), "doc_id"])
    staged_rows, staged_metadata = outputs[staged]
    assert staged_metadata["staged_change_questions"].value == len(hit) == 11
    assert not lost & {d for ids in staged_rows["retrieved_doc_ids"] for d in ids}
    before_rows, before_metadata = outputs[before]
    assert before_metadata["staged_change_questions"].value == 0
    assert lost & {d for ids in before_rows["retrieved_doc_ids"] for d in ids}
