"""Cost before and during a run: the estimate that calls nothing, and the run's spending cap.

Against the real loopback server (which must see no request for an estimate), litellm's real
token counter and cost map (a test model registered with a price, and one without).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import litellm
import numpy as np
import pandas as pd
import pytest
import time_machine
from dagster import DagsterInstance, MaterializeResult, asset, build_sensor_context, materialize

from rag_eval_pipeline.defs.outcome import cost as run_cost
from rag_eval_pipeline.defs.outcome.cost import run_cost_sensor, tag_run_cost
from rag_eval_pipeline.defs.outcome.summary import partition_summary, run_llm_usage
from rag_eval_pipeline.defs.shared.resources import LLMResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.cost import (
    CALLS_TAG,
    COMPLETE_TAG,
    COST_TAG,
    cost_quality,
    cost_tags,
    total_cost_usd,
    usage_table,
)
from rag_eval_pipeline.evaluation.item_scores import empty_items
from rag_eval_pipeline.evaluation.scorecard import MONITOR, Thresholds, build_scorecard
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.evaluation.verdicts.wording import REGRESSED
from rag_eval_pipeline.llm.budget import MAX_COST_ENV, CostBudget, max_cost_from_env
from rag_eval_pipeline.llm.client import LLMClient
from rag_eval_pipeline.llm.estimate import PromptEstimate, stand_in_text, worst_case_cost
from rag_eval_pipeline.settings import THRESHOLDS_FILE
from rag_eval_pipeline.storage.warehouse import WarehouseStore
from rag_eval_pipeline_tests.conftest import materialize_demo_assets
from rag_eval_pipeline_tests.openai_server import echo_last_user_message, run_openai_server
from rag_eval_pipeline_tests.test_llm_client import ask, make_client

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PRICED = "openai/test-judge-costed"
INPUT_PRICE, OUTPUT_PRICE = 2e-6, 8e-6


def words(count: int) -> Callable[[dict[str, Any]], str]:
    """A responder whose replies are `count` words (the loopback server's output tokens)."""
    return lambda request: " ".join(["word"] * count)


def at_most_max_tokens(request: dict[str, Any]) -> str:
    """The echo reply cut at the request's `max_tokens` words, as a provider stops at
    `max_tokens` output tokens (the loopback server counts a word as a token)."""
    return " ".join(echo_last_user_message(request).split()[: request["max_tokens"]])


@pytest.fixture(autouse=True)
def priced_model() -> None:
    litellm.register_model(
        {
            PRICED: {
                "input_cost_per_token": INPUT_PRICE,
                "output_cost_per_token": OUTPUT_PRICE,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
    )


def test_estimate_counts_uncached_prompts_tokens_and_price_without_calling(
    tmp_path: Path,
) -> None:
    with run_openai_server() as server:
        warm = make_client(server, model=PRICED, cache_dir=tmp_path, max_tokens=20)
        warm.complete_many([ask("cached 0"), ask("cached 1")])
        server.reset()
        estimate = PromptEstimate()
        client = LLMClient(warm.config, estimate=estimate, role="judge")
        prompts = [ask("cached 0"), ask("cached 1"), ask("new 0"), ask("new 1"), ask("new 1")]
        replies = client.complete_many(prompts)
        assert server.request_count == 0
    new = [ask("new 0"), ask("new 1")]
    tokens = sum(litellm.token_counter(model=PRICED, messages=m) for m in new)
    (counted,) = estimate.models.values()
    assert (counted.role, counted.model) == ("judge", PRICED)
    assert (counted.uncached, counted.cached) == (2, 3)  # two cache hits, one duplicate
    assert counted.prompt_tokens == tokens and counted.max_completion_tokens == 2 * 20
    assert counted.input_cost_usd == pytest.approx(tokens * INPUT_PRICE)
    assert counted.max_output_cost_usd == pytest.approx(40 * OUTPUT_PRICE)
    assert estimate.max_cost_usd == pytest.approx(tokens * INPUT_PRICE + 40 * OUTPUT_PRICE)
    assert [r.text for r in replies[2:]] == [stand_in_text(20)] * 3
    assert replies[0].cached and client.usage.calls == 0
    # Nothing of the estimate was cached: a real client still finds only the two warm prompts.
    assert len(client.uncached(prompts)) == 2


def test_a_model_without_price_is_unknown_not_free(tmp_path: Path) -> None:
    estimate = PromptEstimate()
    with run_openai_server() as server:
        client = LLMClient(make_client(server).config, estimate=estimate, role="generator")
        client.complete_many([ask("what does this cost?")])
    (counted,) = estimate.models.values()
    assert counted.uncached == 1 and counted.prompt_tokens > 0
    assert counted.input_cost_usd is None and estimate.max_cost_usd is None
    assert estimate.lines()[-1] == "total: <= unknown"


def test_spent_budget_turns_the_remaining_prompts_into_error_rows() -> None:
    prompts = [ask(f"q {i}") for i in range(10)]
    worst_case = worst_case_cost(PRICED, prompts[0], 20)
    assert worst_case == pytest.approx(
        litellm.token_counter(model=PRICED, messages=prompts[0]) * INPUT_PRICE + 20 * OUTPUT_PRICE
    )
    with run_openai_server(responder=words(20)) as server:
        budget = CostBudget(limit_usd=2.5 * worst_case)
        client = LLMClient(
            make_client(server, model=PRICED, max_tokens=20, max_concurrency=1).config, budget
        )
        replies = client.complete_many(prompts)
    answered = [r for r in replies if r.error is None]
    refused = [r for r in replies if r.error is not None]
    assert len(answered) == server.request_count >= 2
    assert budget.spent_usd == pytest.approx(sum(r.cost_usd for r in answered))
    # The next prompt's worst case no longer fitted under the cap, and nothing is held any more.
    assert budget.spent_usd <= 2.5 * worst_case < budget.spent_usd + worst_case
    assert budget.reserved_usd == 0.0
    assert all(r.error.startswith("budget exhausted: ") for r in refused)
    assert MAX_COST_ENV in refused[0].error and "may cost $" in refused[0].error
    assert budget.refused == client.usage.budget_refused == len(refused) > 0


def test_a_billed_reply_without_text_is_charged() -> None:
    """A provider that bills a response with no text (a content filter): an error row at once
    (asking again gets the same), and its cost counts against the cap and in the usage."""
    with run_openai_server(responder=words(5), faults=["empty", "ok"]) as server:
        budget = CostBudget(limit_usd=1.0)
        config = make_client(server, model=PRICED, max_tokens=20, max_concurrency=1).config
        client = LLMClient(config, budget)
        filtered, answered = client.complete_many([ask("filtered"), ask("answered")])
    assert filtered.error == "ValueError: the provider returned no message content"
    assert answered.error is None and answered.cost_usd > 0 and server.request_count == 2
    assert budget.spent_usd > answered.cost_usd
    assert client.usage.cost_usd == pytest.approx(budget.spent_usd)


def test_calls_in_flight_never_overshoot_the_cap() -> None:
    """8 calls at once against a cap of 2.5 worst cases: reservations keep at most 2 in flight,
    and the replies, each about as long as `max_tokens`, never add up to more than the cap
    (charging only on reply, all 8 would be sent and cost about 3 times the cap)."""
    prompts = [ask(f"question number {i}") for i in range(16)]
    worst_case = max(worst_case_cost(PRICED, p, 20) or 0.0 for p in prompts)
    with run_openai_server(responder=words(20), latency_s=0.2) as server:
        budget = CostBudget(limit_usd=2.5 * worst_case)
        client = LLMClient(
            make_client(server, model=PRICED, max_tokens=20, max_concurrency=8).config, budget
        )
        replies = client.complete_many(prompts)
    answered = [r for r in replies if r.error is None]
    assert server.max_in_flight == 2 and len(answered) == server.request_count >= 2
    assert budget.spent_usd == pytest.approx(sum(r.cost_usd for r in answered))
    # The cap was never overshot, and the calls went on until the next worst case did not fit.
    assert budget.spent_usd <= budget.limit_usd < budget.spent_usd + worst_case
    assert budget.reserved_usd == 0.0
    assert all(r.error.startswith("budget exhausted: ") for r in replies if r not in answered)


def test_a_capped_budget_lets_an_unpriced_model_through_and_counts_it() -> None:
    """No price, no reservation: the prompts are sent, and their cost is counted as unknown."""
    budget = CostBudget(limit_usd=0.01)
    with run_openai_server() as server:
        client = LLMClient(make_client(server, max_concurrency=4).config, budget)
        replies = client.complete_many([ask(f"q {i}") for i in range(5)])
    assert all(r.error is None for r in replies) and server.request_count == 5
    assert (budget.unpriced, budget.spent_usd, budget.reserved_usd) == (5, 0.0, 0.0)
    assert client.unpriced_calls == 5


def test_reservations_hold_release_and_wait() -> None:
    budget = CostBudget(limit_usd=1.0)
    held = [budget.reserve(0.1, "a"), budget.reserve(0.2, "b")]
    assert held == [0.1, 0.2] and budget.reserved_usd == pytest.approx(0.3)
    # 0.8 does not fit beside what is held, but will once those calls land: wait, not refuse.
    assert budget.reserve(0.8, "big") is None and budget.could_cover(0.8)
    # First come, first served: a small prompt arriving later does not overtake the big one.
    assert budget.reserve(0.01, "small") is None
    budget.charge(0.05)
    for amount in held:
        budget.release(amount)
    assert budget.reserved_usd == 0.0  # 0.1 + 0.2 - 0.1 - 0.2 is not 0.0 in floats
    assert budget.reserve(0.01, "small") is None  # still behind "big"
    assert budget.reserve(0.8, "big") == 0.8 and budget.reserve(0.01, "small") == 0.01
    for amount in (0.8, 0.01):
        budget.release(amount)
    assert budget.reserve(0.95, "c") == 0.95 and budget.reserve(None, "d") is None
    budget.leave("d")
    budget.release(0.95)
    assert not budget.could_cover(0.96) and budget.reserve(None, "e") == 0.0  # not capped
    budget.release(0.0)
    budget.charge(0.95)
    assert not budget.could_cover(None) and budget.reserve(None, "f") is None
    assert CostBudget(limit_usd=None).reserve(123.0, "g") == 0.0


def test_nothing_held_leaves_no_float_residue() -> None:
    """After any sequence of reservations, with every call landed the budget holds exactly 0."""
    rng = np.random.default_rng(1)
    budget = CostBudget(limit_usd=1e9)
    held: list[float] = []
    for step in range(20_000):
        if len(held) < 32 and (not held or rng.random() < 0.5):
            amount = budget.reserve(float(rng.uniform(0.01, 2.0)), step)
            assert amount is not None
            held.append(amount)
        else:
            budget.release(held.pop(int(rng.integers(len(held)))))
    for amount in held:
        budget.release(amount)
    assert budget.reserved_usd == 0.0


def test_max_cost_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_COST_ENV, raising=False)
    assert max_cost_from_env() is None
    monkeypatch.setenv(MAX_COST_ENV, "1.50")
    assert max_cost_from_env() == 1.5
    for bad in ("lots", "-1", "nan"):
        monkeypatch.setenv(MAX_COST_ENV, bad)
        with pytest.raises(ValueError, match=MAX_COST_ENV):
            max_cost_from_env()


def test_run_cost_and_exhausted_budget_reach_the_run_summary(
    tmp_path: Path,
    embedder: Embedder,
    dagster_instance: DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MAX_COST_ENV, "0.002")  # a judge prompt's worst case: about $0.0009
    with run_openai_server(responder=at_most_max_tokens) as server:
        judge = LLMResource(
            model=PRICED,
            api_base=server.base_url,
            api_key="sk-test",
            cache_dir=str(tmp_path / "llm-cache"),
            max_concurrency=2,
            max_tokens=64,
        )
        result = materialize_demo_assets(
            dagster_instance,
            tmp_path,
            embedder,
            {"golden_dataset", "ideal_context_generations", "generation_judgments"},
            judge_llm=judge,
        )
        requests = server.request_count
    assert result.success
    usage = run_llm_usage(dagster_instance, result.run_id)
    refused = int(usage["budget_refused"].sum())
    assert usage["calls"].sum() == requests > 0 and refused > 0
    # Each call held its worst case while in flight: the cap was never overshot.
    assert 0 < usage["cost_usd"].sum() <= 0.002
    metadata = result.asset_materializations_for_node("generation_judgments")[0].metadata
    assert metadata["judge_budget_refused"].value == refused
    summary = partition_summary(
        dagster_instance,
        WarehouseStore(str(tmp_path / "warehouse")),
        "demo-v1",
        "2026-11-20",
        result.run_id,
        regressions_selected=False,
    )
    assert summary.needs_look and "budget exhausted" in summary.verdict
    assert any(line.startswith("  LLM: ") and ", $0." in line for line in summary.lines)
    assert any("budget exhausted: " in line for line in summary.lines)
    # The daemon's sensor tags the finished run with what it cost, once.
    context = build_sensor_context(instance=dagster_instance)
    assert "tagged 1 " in str(run_cost_sensor(context).skip_message)
    tags = dagster_instance.get_run_by_id(result.run_id).tags
    cost = float(usage["cost_usd"].sum())
    assert tags[COST_TAG] == f"{cost:.6f}" and tags[CALLS_TAG] == str(requests)
    assert "tagged 0 " in str(run_cost_sensor(context).skip_message)
    assert tag_run_cost(dagster_instance, result.run_id) == {
        COST_TAG: tags[COST_TAG],
        CALLS_TAG: tags[CALLS_TAG],
    }
    # The scorecard's cost rows are made of the same numbers.
    rows = cost_quality(usage).set_index(["system", "metric"])["mean"]
    assert rows["judge", "cost_usd"] == rows["all", "cost_usd"] == pytest.approx(cost)
    assert rows["judge", "llm_calls"] == requests
    assert rows["judge", "budget_refused"] == refused


def judge_and_local_generator_usage(judge_cost: float) -> pd.DataFrame:
    """The usage of three assets: two judged at a known price, one generated by an unpriced
    local model, and one asset that calls no LLM."""

    def role(name: str, model: str, calls: int, cost: float, refused: int = 0) -> dict[str, Any]:
        return {
            f"{name}_model": model,
            f"{name}_calls": calls,
            f"{name}_cache_hits": 2,
            f"{name}_prompt_tokens": 100 * calls,
            f"{name}_completion_tokens": 10 * calls,
            f"{name}_cost_usd": cost,
            f"{name}_budget_refused": refused,
        }

    return usage_table(
        [
            ("generation_judgments", {"n_rows": 12, **role("judge", PRICED, 10, judge_cost, 3)}),
            ("e2e_judgments", role("judge", PRICED, 5, 0.001)),
            ("ideal_context_generations", role("generator", "openai/local", 4, math.nan)),
            ("golden_dataset", {"n_rows": 3}),
        ]
    )


def test_usage_becomes_monitored_cost_rows_where_unknown_stays_unknown() -> None:
    usage = judge_and_local_generator_usage(0.0024)
    assert list(usage["asset"]) == [
        "generation_judgments",
        "e2e_judgments",
        "ideal_context_generations",
    ]
    assert math.isnan(total_cost_usd(usage))
    assert total_cost_usd(usage[usage["role"] == "judge"]) == pytest.approx(0.0034)
    assert cost_tags(usage) == {COST_TAG: "unknown", CALLS_TAG: "19"}
    assert cost_tags(usage[usage["role"] == "judge"])[COST_TAG] == "0.003400"
    assert cost_tags(usage.iloc[0:0]) == {}
    quality = cost_quality(usage)
    values = quality.set_index(["system", "metric"])["mean"]
    assert values["judge", "cost_usd"] == pytest.approx(0.0034)
    assert math.isnan(values["generator", "cost_usd"]) and math.isnan(values["all", "cost_usd"])
    assert values["judge", "llm_calls"] == 15 and values["all", "llm_calls"] == 19
    assert values["all", "input_tokens"] == 1900 and values["all", "output_tokens"] == 190
    assert values["judge", "budget_refused"] == 3
    counts = quality.groupby("system")["count"].first()
    assert counts.to_dict() == {"all": 19 + 6, "generator": 4 + 2, "judge": 15 + 4}
    for thresholds in (Thresholds.load(THRESHOLDS_FILE), Thresholds()):
        card = build_scorecard([quality], "demo-v1", "2026-11-20", thresholds)
        assert set(card["tier"]) == {"cost"} and set(card["role"]) == {MONITOR}
        assert not card["higher_is_better"].any() and card["band"].isna().all()


def test_a_run_that_costs_three_times_more_is_shown_never_alerted() -> None:
    def scores(date: str, judge_cost: float) -> PartitionScores:
        quality = cost_quality(judge_and_local_generator_usage(judge_cost))
        card = build_scorecard([quality], "demo-v1", date, Thresholds.load(THRESHOLDS_FILE))
        return PartitionScores("demo-v1", date, card, empty_items())

    verdicts = compare_partitions(
        scores("2026-11-21", 0.0072), scores("2026-11-20", 0.0024), RegressionRule()
    ).set_index(["system", "metric"])
    assert verdicts.loc[("judge", "cost_usd"), "relative_change"] == pytest.approx(
        (0.0082 - 0.0034) / 0.0034
    )
    assert verdicts.loc[("judge", "cost_usd"), "verdict"] == REGRESSED
    assert not verdicts["alert"].any()


@pytest.mark.parametrize("command", [["estimate"], ["run", "--dry-run"]])
def test_estimate_command_calls_nothing_and_keeps_no_result(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rag-eval estimate` (or `run --dry-run`) with a judge at a live loopback server: the
    server sees no request, the judge's prompts are priced, and the result cache gains nothing
    made of stand-ins."""
    from rag_eval_pipeline.cli import main
    from rag_eval_pipeline.defs.shared.resources import ResultCacheResource

    results = Path(ResultCacheResource().directory)
    before = set(results.glob("*")) if results.exists() else set()
    with run_openai_server() as server:
        monkeypatch.setenv("RAG_EVAL_JUDGE_MODEL", PRICED)
        monkeypatch.setenv("RAG_EVAL_JUDGE_API_BASE", server.base_url)
        monkeypatch.delenv("RAG_EVAL_GENERATOR_MODEL", raising=False)
        code = main([*command, "--dataset-version", "demo-v1", "--date", "2026-11-20"])
        assert server.request_count == 0
    output = capsys.readouterr().out
    assert code == 0, output
    (judge_line,) = [line for line in output.splitlines() if line.startswith(f"  judge {PRICED}")]
    assert "uncached prompt(s)" in judge_line and "unknown" not in judge_line
    assert output.splitlines()[-1].startswith("  total: <= $")
    assert (set(results.glob("*")) if results.exists() else set()) == before


def test_dry_run_refuses_the_options_of_a_real_run(capsys: pytest.CaptureFixture[str]) -> None:
    from rag_eval_pipeline.cli import main

    assert main(["run", "--dry-run", "--days", "3", "--select", "retrieval_metrics+"]) == 2
    assert "it takes no --days, --select" in capsys.readouterr().err


@asset
def judged_once() -> MaterializeResult:
    return MaterializeResult(
        metadata={"judge_model": PRICED, "judge_calls": 3, "judge_cost_usd": 0.25}
    )


@asset(deps=[judged_once])
def fails_after_judging() -> None:
    raise RuntimeError("a step that fails after the judge was paid")


def test_a_failed_runs_cost_is_tagged_as_a_lower_bound(dagster_instance: DagsterInstance) -> None:
    result = materialize(
        [judged_once, fails_after_judging], instance=dagster_instance, raise_on_error=False
    )
    assert not result.success
    assert tag_run_cost(dagster_instance, result.run_id) == {
        COST_TAG: "0.250000",
        CALLS_TAG: "3",
        COMPLETE_TAG: "false",
    }


def test_the_cost_sensor_tags_runs_finished_at_the_same_instant_across_pages(
    dagster_instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`updated_after` is strict: two runs updated at the same instant, split by the page size,
    are both tagged (the cursor keeps the runs seen at its instant)."""
    # The clock stopped: both runs are updated at the same instant.
    with time_machine.travel(datetime.now(UTC), tick=False):
        run_ids = [materialize([judged_once], instance=dagster_instance).run_id for _ in range(2)]
    records = dagster_instance.get_run_records()
    assert len({record.update_timestamp for record in records}) == 1
    monkeypatch.setattr(run_cost, "RUNS_PER_TICK", 1)
    cursor = None
    for _ in range(3):
        context = build_sensor_context(instance=dagster_instance, cursor=cursor)
        run_cost.run_cost_sensor(context)
        cursor = context.cursor
    tags = [dagster_instance.get_run_by_id(run_id).tags for run_id in run_ids]
    assert [t.get(COST_TAG) for t in tags] == ["0.250000", "0.250000"]
    assert all(COMPLETE_TAG not in t for t in tags)
