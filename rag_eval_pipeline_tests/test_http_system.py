"""The system under test over HTTP, against a real service on 127.0.0.1 (`rag_service`).

Each failure class of the shared policy (`llm.failures`) meets the real thing: every kind of
failed attempt raises what `classify` reads; a slow service (timeout), one that answers 500
(retried, then an error row), 500 once then 200 (succeeds), 401 (not retried), 429 with
Retry-After (waited for, without using up retries or counting towards the breaker, within the
rate-limit budget), a reply that is not JSON; the breaker shared per URL stops a failing service
and half-opens; a secret header never appears in any output; a hostile question keeps the
request body valid JSON; sessions go in turn order within the concurrency bound. One test
materializes Tier 3 and Tier 1 on the system's ids through Dagster on a real instance.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import time
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
import yaml
from dagster import DagsterInstance, materialize

from rag_eval_pipeline.datasets.golden import GoldenDataset, load_dataset
from rag_eval_pipeline.datasets.http_config import (
    HttpSystemConfig,
    http_config_problems,
    resolve_headers,
    resolve_http_config,
)
from rag_eval_pipeline.datasets.manifest import DatasetManifest, read_manifest
from rag_eval_pipeline.definitions import default_resources
from rag_eval_pipeline.defs.dataset.assets import golden_dataset
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource, RagSystemResource
from rag_eval_pipeline.defs.tier3_e2e.assets import e2e_generations
from rag_eval_pipeline.defs.tier3_e2e.system_under_test import (
    system_retrieval_metrics,
    system_retrieval_quality,
)
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.llm.breaker import BreakerState
from rag_eval_pipeline.llm.client import LLMConfig
from rag_eval_pipeline.llm.failures import FailureClass, classify, retry_after_s
from rag_eval_pipeline.systems.http_rag import HttpRag, InvalidReply, request_values
from rag_eval_pipeline.systems.rag import RAG_OUTPUT_COLUMNS
from rag_eval_pipeline_tests.conftest import evaluation_resources
from rag_eval_pipeline_tests.rag_service import RagService, run_rag_service

pytestmark = [pytest.mark.integration]

SECRET = "tok-5f3a9c1e77d24b08a6e1"
ENVIRON = {"RAG_EVAL_HTTP_TOKEN": SECRET}
HOSTILE = 'He said "hi" \\ }{ ],\n\t$question ${turn} $$ \u2028 ünïcødé 🚀 \x00 </script>'
DOCUMENTS = {"What is a bucket?": ["d1", "d2"], "Who pays?": ["d3"], HOSTILE: ["d2"]}


def block(url: str, **overrides: Any) -> dict[str, Any]:
    """An `http:` block for the test service: nested selectors, a templated body, a secret."""
    return {
        "url": url,
        "headers": {"Authorization": "Bearer ${RAG_EVAL_HTTP_TOKEN}", "X-Client": "rag-eval"},
        "body": {
            "query": "$question",
            "session": "$session_id",
            "turn": "$turn",
            "meta": {"text": "q=$question", "id": "${query_id}", "fixed": [1, True, None]},
        },
        "answer": "$.data.answer",
        "retrieved_doc_ids": "$.data.sources[*].id",
        "contexts": "$.data.sources[*].text",
        "retrieval_latency_ms": "$.timing.retrieval_ms",
        "timeout_s": 0.4,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "max_concurrency": 4,
        **overrides,
    }


def http_system(url: str, **overrides: Any) -> HttpRag:
    return HttpRag(HttpSystemConfig.from_mapping(block(url, **overrides), "test"), None, ENVIRON)


def queries(*questions: str, **columns: list[Any]) -> pd.DataFrame:
    ids = [f"q{i}" for i in range(1, len(questions) + 1)]
    return pd.DataFrame({"query_id": ids, "question": list(questions), **columns})


def requests_for(service: RagService, question: str) -> list[Any]:
    return [r for r in service.requests if r.body and r.body.get("query") == question]


def test_answers_ids_contexts_latency_and_the_rendered_body() -> None:
    with run_rag_service(DOCUMENTS) as service:
        system = http_system(service.url)
        out = system.answer(
            queries("What is a bucket?", "Who pays?", session_id=["s1", None], turn=[2, None])
        )
    assert list(out.columns) == RAG_OUTPUT_COLUMNS
    assert out["error"].isna().all()
    assert out["retrieved_doc_ids"].tolist() == [["d1", "d2"], ["d3"]]
    assert out["contexts"].tolist() == [["text of d1", "text of d2"], ["text of d3"]]
    assert out["answer"].tolist() == [
        "echo What is a bucket? (auth ***)",
        "echo Who pays? (auth ***)",
    ]
    assert (out["total_latency_ms"] > 0).all() and (out["total_latency_ms"] < 400).all()
    assert out["retrieval_latency_ms"].tolist() == [12.5, 12.5]
    assert out["system"].unique().tolist() == [service.url]
    first = requests_for(service, "What is a bucket?")[0]
    assert first.body == {
        "query": "What is a bucket?",
        "session": "s1",
        "turn": 2,
        "meta": {"text": "q=What is a bucket?", "id": "q1", "fixed": [1, True, None]},
    }
    assert first.headers["authorization"] == f"Bearer {SECRET}"
    assert first.headers["content-type"] == "application/json"
    assert requests_for(service, "Who pays?")[0].body["session"] is None
    assert system.usage.as_metadata() == {"calls": 2, "retries": 0, "rate_limited": 0, "errors": 0}


def test_a_hostile_question_keeps_the_body_valid_json() -> None:
    with run_rag_service(DOCUMENTS) as service:
        out = http_system(service.url).answer(queries(HOSTILE, turn=[1]))
    (request,) = service.requests  # the service parsed the body as JSON, or it would be a 400
    assert request.body["query"] == HOSTILE
    assert request.body["meta"]["text"] == "q=" + HOSTILE
    assert request.body["turn"] == 1
    assert pd.isna(out.loc[0, "error"])
    assert out.loc[0, "retrieved_doc_ids"] == ["d2"]


def test_get_with_query_parameters() -> None:
    with run_rag_service(DOCUMENTS) as service:
        system = http_system(service.url, method="GET", body=None, params={"q": "$question"})
        out = system.answer(queries("Who pays?"))
    assert service.requests[0].query == "q=Who+pays%3F"
    assert service.requests[0].body is None
    assert out["retrieved_doc_ids"].tolist() == [["d3"]]


def test_each_failure_class_becomes_an_error_row_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="rag_eval_pipeline.systems.http_rag")
    asked = ["Who pays?", "slow: a", "fail: b", "flaky: c", "auth: d", "garbage: e"]
    with run_rag_service(DOCUMENTS) as service:
        system = http_system(service.url, breaker_min_calls=0)
        out = system.answer(queries(*asked)).set_index("question")
        counts = {question: service.count(question) for question in asked}
    errors = out["error"]
    assert errors[["Who pays?", "flaky: c"]].isna().all()
    assert out.loc["flaky: c", "answer"] == "echo flaky: c (auth ***)"
    assert errors["slow: a"] == "timeout: no reply within 0.4 s (3 attempts)"
    assert errors["fail: b"] == 'HTTP 500: "{\\"error\\": \\"internal error\\"}" (3 attempts)'
    assert errors["auth: d"] == (
        'HTTP 401: "{\\"error\\": \\"bad credentials: ***\\"}" (1 attempt)'
    )
    assert errors["garbage: e"] == 'invalid reply: not JSON: "<html>not json</html>" (1 attempt)'
    assert counts == {
        "Who pays?": 1,
        "slow: a": 3,
        "fail: b": 3,
        "flaky: c": 2,
        "auth: d": 1,
        "garbage: e": 1,
    }
    failed = ["slow: a", "fail: b", "auth: d", "garbage: e"]
    assert out.loc[failed, "answer"].isna().all()
    assert out.loc[failed, "total_latency_ms"].isna().all()
    assert system.usage.as_metadata() == {
        "calls": 11,
        "retries": 5,
        "rate_limited": 0,
        "errors": 4,
    }
    assert "retrying" in caplog.text
    outputs = out.reset_index().to_json() + caplog.text + json.dumps(counts)
    assert SECRET not in outputs


def test_429_waits_for_retry_after() -> None:
    with run_rag_service(DOCUMENTS) as service:
        out = http_system(service.url).answer(queries("rate: x"))
    first, second = service.requests
    assert second.started_at - first.started_at >= 0.95  # Retry-After: 1, backoff 0.01 s
    assert pd.isna(out.loc[0, "error"])


def test_429s_use_no_retries_and_never_count_towards_the_breaker() -> None:
    with run_rag_service(DOCUMENTS) as service:
        system = http_system(service.url, max_retries=0, breaker_window=1, breaker_min_calls=1)
        out = system.answer(queries("throttled: x"))
    assert out.loc[0, "answer"] == "echo throttled: x (auth ***)"
    assert pd.isna(out.loc[0, "error"])
    first, second, third = service.requests  # 429, 429 (Retry-After: 0.2 each), 200
    assert second.started_at - first.started_at >= 0.19
    assert third.started_at - second.started_at >= 0.19
    assert system.usage.as_metadata() == {"calls": 3, "retries": 2, "rate_limited": 2, "errors": 0}
    assert system.breaker.trips == 0 and system.breaker.state is BreakerState.CLOSED


def test_rate_limits_give_up_when_their_budget_is_spent() -> None:
    with run_rag_service(DOCUMENTS) as service:
        out = http_system(service.url, rate_limit_budget_s=0.1).answer(queries("throttled: y"))
    assert len(service.requests) == 1  # its Retry-After (0.2 s) exceeds the budget
    assert out.loc[0, "error"] == (
        "rate limited: still refused after 1 rate limit(s) waited out "
        '(rate_limit_budget_s=0.1): HTTP 429: "{\\"error\\": \\"slow down\\"}" (1 attempt)'
    )


def test_the_circuit_breaker_stops_calling_a_failing_service_and_half_opens() -> None:
    with run_rag_service(DOCUMENTS) as service:
        settings = {"max_retries": 0, "max_concurrency": 1, "breaker_min_calls": 2}
        system = http_system(service.url, breaker_cooldown_s=0.3, **settings)
        out = system.answer(queries(*(f"fail: {i}" for i in range(5))))
        assert len(service.requests) == 2
        assert out["error"].str.startswith("HTTP 500").sum() == 2
        assert out["error"].str.startswith("circuit breaker open").sum() == 3
        later_step = http_system(service.url, **settings)  # the same URL: the same breaker
        assert later_step.breaker is system.breaker
        refused = later_step.answer(queries("Who pays?"))
        assert refused.loc[0, "error"].startswith("circuit breaker open")
        assert len(service.requests) == 2
        time.sleep(0.3)  # the cooldown: one probe goes out, succeeds, and closes the breaker
        answered = later_step.answer(queries("Who pays?", "What is a bucket?"))
    assert answered["error"].isna().all()
    assert system.breaker.state is BreakerState.CLOSED and system.breaker.trips == 1


def test_an_unreachable_service_is_a_connection_error_row() -> None:
    with run_rag_service() as service:
        url = service.url
    out = http_system(url, max_retries=1).answer(queries("Who pays?"))
    assert out.loc[0, "error"].startswith("connection error: ConnectError")
    assert out.loc[0, "error"].endswith("(2 attempts)")


def test_concurrency_is_bounded_and_sessions_go_in_turn_order() -> None:
    sessions = ["s1", "s1", "s1", *[None] * 9]
    turns = [3, 1, 2, *[None] * 9]
    asked = [f"session {t}" for t in turns[:3]] + [f"single {i}" for i in range(9)]
    with run_rag_service(delay_s=0.05) as service:
        system = http_system(service.url, max_concurrency=3, timeout_s=5)
        out = system.answer(queries(*asked, session_id=sessions, turn=turns))
    assert out["question"].tolist() == asked
    assert out["error"].isna().all()
    assert service.max_in_flight == 3
    session = [r for r in service.requests if r.body["session"] == "s1"]
    assert [r.body["turn"] for r in session] == [1, 2, 3]
    assert all(b.started_at >= a.finished_at for a, b in itertools.pairwise(session))


@pytest.mark.parametrize(
    ("question", "raised", "failure", "message"),
    [
        ("fail: b", httpx.HTTPStatusError, FailureClass.TRANSIENT, "HTTP 500: "),
        ("408: b", httpx.HTTPStatusError, FailureClass.TRANSIENT, "HTTP 408: "),
        ("rate: x", httpx.HTTPStatusError, FailureClass.RATE_LIMITED, "HTTP 429: "),
        ("auth: d", httpx.HTTPStatusError, FailureClass.PERMANENT, 'HTTP 401: "{\\"error'),
        ("404: d", httpx.HTTPStatusError, FailureClass.PERMANENT, "HTTP 404: "),
        ("garbage: e", InvalidReply, FailureClass.PERMANENT, "invalid reply: not JSON: "),
        ("slow: a", httpx.ReadTimeout, FailureClass.TRANSIENT, "timeout: no reply within 0.4 s"),
        (None, httpx.ConnectError, FailureClass.CONNECTION_REFUSED, "connection error: Connect"),
    ],
)
def test_each_failed_attempt_raises_what_the_shared_policy_classifies(
    question: str | None, raised: type[Exception], failure: FailureClass, message: str
) -> None:
    with run_rag_service(DOCUMENTS) as service:
        url = service.url
        if question is not None:
            system = http_system(url)
            with system.client() as client, pytest.raises(raised) as caught:
                system.attempt(client, request_values(queries(question))[0])
    if question is None:  # the service is gone: nothing listens on its port
        system = http_system(url)
        with system.client() as client, pytest.raises(raised) as caught:
            system.attempt(client, request_values(queries("Who pays?"))[0])
    assert classify(caught.value) is failure
    assert str(caught.value).startswith(message)
    assert SECRET not in str(caught.value)
    assert retry_after_s(caught.value) == (1.0 if question == "rate: x" else None)


def test_invalid_http_blocks_name_the_file_key_and_value(tmp_path: Path) -> None:
    (tmp_path / "dataset.yaml").write_text(
        "system: http\n"
        "http:\n"
        "  url: ftp://example.com/ask\n"
        "  method: FETCH\n"
        "  headers:\n"
        "    Authorization: Bearer ${OPENAI_API_KEY}\n"
        "    X Spaced: fine\n"
        '    X-Injected: "a\\r\\nX-Evil: 1"\n'
        "  body: {query: $question, extra: $secret_sauce, 2024-01-01: date}\n"
        "  answer: $..[\n"
        "  timeout_s: 0\n"
        "  retries: 3\n"
        "  breaker_failure_ratio: 2\n"
    )
    manifest, issues = read_manifest(tmp_path)
    assert manifest == DatasetManifest()
    found = {issue.column: (issue.line, str(issue)) for issue in issues}
    assert set(found) == {
        "http.url",
        "http.method",
        "http.headers.Authorization",
        "http.headers.X Spaced",
        "http.headers.X-Injected",
        "http.body",
        "http.body.extra",
        "http.answer",
        "http.timeout_s",
        "http.retries",
        "http.breaker_failure_ratio",
    }
    assert all(text.startswith("dataset.yaml, line") for _, text in found.values())
    assert found["http.url"][0] == 3 and "'ftp://example.com/ask'" in found["http.url"][1]
    assert "'FETCH'" in found["http.method"][1]
    assert found["http.headers.Authorization"][0] == 6
    assert "${OPENAI_API_KEY}" in found["http.headers.Authorization"][1]
    assert "'X Spaced'" in found["http.headers.X Spaced"][1]
    assert "X-Evil" in found["http.headers.X-Injected"][1]
    assert "datetime.date(2024, 1, 1)" in found["http.body"][1]
    assert "'$secret_sauce'" in found["http.body.extra"][1]
    assert "'$..['" in found["http.answer"][1]
    assert "got 0" in found["http.timeout_s"][1]
    assert found["http.retries"][0] == 12
    assert found["http.retries"][1].endswith("unknown key; did you mean 'max_retries'?")
    assert found["http.breaker_failure_ratio"] == (
        13,
        "dataset.yaml, line 13, column 'http.breaker_failure_ratio': "
        "must be a number > 0 and <= 1, got 2",
    )


def test_the_failure_policy_settings_are_the_llm_clients_and_are_validated() -> None:
    llm_defaults = {f.name: f.default for f in dataclasses.fields(LLMConfig)}
    shared = ["max_retries", "backoff_base_s", "rate_limit_budget_s"]
    shared += [key for key in HttpSystemConfig.model_fields if key.startswith("breaker_")]
    assert len(shared) == 7
    defaults = {key: HttpSystemConfig.model_fields[key].default for key in shared}
    assert defaults == {k: llm_defaults[k] for k in shared}
    config = HttpSystemConfig.from_mapping({"url": "http://127.0.0.1:9/a"}, "x")
    assert {key: getattr(config, key) for key in shared} == {k: llm_defaults[k] for k in shared}
    problems = dict(
        http_config_problems(
            {
                "url": "http://h/a",
                "breaker_failure_ratio": 1.5,
                "breaker_cooldown_s": -1,
                "rate_limit_budget_s": "soon",
                "breaker_failures": 5,
            }
        )
    )
    assert problems["http.breaker_failure_ratio"] == "must be a number > 0 and <= 1, got 1.5"
    assert problems["http.breaker_cooldown_s"] == "must be a number >= 0, got -1"
    assert problems["http.rate_limit_budget_s"] == "must be a number >= 0, got 'soon'"
    assert "no longer a setting" in problems["http.breaker_failures"]
    assert http_config_problems({"url": "http://h/a", "breaker_min_calls": 30}) == [
        ("http.breaker_min_calls", "breaker_min_calls (30) must be at most breaker_window (20)")
    ]


def test_the_configuration_in_effect_and_its_errors(tmp_path: Path) -> None:
    dataset_block = {"url": "http://127.0.0.1:9/a", "name": "my-rag"}
    assert resolve_http_config(dataset_block, block_source="x").url == "http://127.0.0.1:9/a"
    overridden = resolve_http_config(dataset_block, block_source="x", url="https://h.example/b")
    assert (overridden.url, overridden.system_name) == ("https://h.example/b", "my-rag")
    with pytest.raises(ValueError, match=r"dataset\.yaml: the http system needs a url.*URL"):
        resolve_http_config(None, block_source="dataset.yaml")
    with pytest.raises(ValueError, match=r"with RAG_EVAL_SYSTEM_URL.*http\.url.*'localhost:80'"):
        resolve_http_config(dataset_block, block_source="x", url="localhost:80")
    operator_file = tmp_path / "http.yaml"
    operator_file.write_text("url: https://user:pw@rag.example/v1/ask?key=k#top\nmax_retries: -1\n")
    with pytest.raises(ValueError, match=rf"{operator_file}.*http\.max_retries.*got -1"):
        resolve_http_config(dataset_block, block_source="x", config_file=str(operator_file))
    operator_file.write_text("url: https://user:pw@rag.example:8443/v1/ask?key=k#top\n")
    chosen = resolve_http_config(dataset_block, block_source="x", config_file=str(operator_file))
    assert chosen.system_name == "https://rag.example:8443/v1/ask"  # the file replaced the block
    with_password = HttpSystemConfig.from_mapping({"url": "http://u:pw-0123456789@h/a"}, "x")
    assert HttpRag(with_password).secrets == ("pw-0123456789",)
    with pytest.raises(ValueError, match=r"'Authorization' references .*RAG_EVAL_HTTP_TOKEN, not"):
        resolve_headers({"Authorization": "Bearer ${RAG_EVAL_HTTP_TOKEN}"}, {})


def test_the_environment_chooses_and_configures_the_http_system(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAG_EVAL_SYSTEM", "http")
    monkeypatch.setenv("RAG_EVAL_SYSTEM_URL", "http://127.0.0.1:9/ask")
    rag_system = default_resources()["rag_system"]
    empty = pd.DataFrame(columns=["query_id", "question"])
    plain = GoldenDataset("v", empty, empty)
    config = rag_system.http_for(plain)
    assert (config.url, config.body, config.selectors["answer"]) == (
        "http://127.0.0.1:9/ask",
        {"question": "$question", "session_id": "$session_id", "turn": "$turn"},
        "$.answer",
    )
    declared = GoldenDataset("v", empty, empty, manifest=DatasetManifest(system="logged"))
    assert rag_system.http_for(declared) is None  # the version's own `system` wins
    operator_file = tmp_path / "http.yaml"
    operator_file.write_text("url: http://10.0.0.1/x\nanswer: $.reply\ntimeout_s: 2\n")
    monkeypatch.setenv("RAG_EVAL_SYSTEM_HTTP", str(operator_file))
    config = default_resources()["rag_system"].http_for(plain)
    assert (config.url, config.selectors["answer"], config.timeout_s) == (
        "http://127.0.0.1:9/ask",  # RAG_EVAL_SYSTEM_URL still replaces the url
        "$.reply",
        2,
    )


def test_the_manifest_keeps_the_http_block(tmp_path: Path) -> None:
    (tmp_path / "dataset.yaml").write_text(
        yaml.safe_dump({"system": "http", "http": block("http://127.0.0.1:9/ask")})
    )
    manifest, issues = read_manifest(tmp_path)
    assert issues == []
    assert manifest.system == "http"
    assert DatasetManifest.from_frame(manifest.to_frame()) == manifest


def write_tiny_dataset(folder: Path, url: str) -> None:
    """Four questions (one answered 401), four documents, one relevant document each."""
    folder.mkdir(parents=True)
    corpus = [{"doc_id": f"d{i}", "text": f"Document {i} about topic {i}."} for i in range(1, 5)]
    asked = ["What is a bucket?", "Who pays?", HOSTILE, "auth: who am I?"]
    rows = [
        {"query_id": f"q{i}", "question": q, "session_id": "s1" if i < 3 else None}
        | {"turn": i if i < 3 else None}
        for i, q in enumerate(asked, start=1)
    ]
    for name, records in (("corpus", corpus), ("queries", rows)):
        lines = [json.dumps(record) for record in records]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "qrels.csv").write_text(
        "query_id,doc_id,relevance\nq1,d1,1\nq2,d2,1\nq3,d3,1\nq4,d4,1\n"
    )
    settings = {"system": "http", "http": block(url, timeout_s=5, name="help-center-rag")}
    (folder / "dataset.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")


def test_tier3_and_tier1_through_dagster_against_the_loopback_service(
    dagster_instance: DagsterInstance,
    embedder: Embedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAG_EVAL_HTTP_TOKEN", SECRET)
    version, day = "http-tiny", "2026-11-21"
    documents = {"What is a bucket?": ["d1", "d2"], "Who pays?": ["d9", "d2"], HOSTILE: ["d4"]}
    with run_rag_service(documents) as service:
        write_tiny_dataset(tmp_path / "datasets" / version, service.url)
        assert load_dataset(tmp_path / "datasets" / version).manifest.system == "http"
        dagster_instance.add_dynamic_partitions(DATASET_VERSION, [version])
        result = materialize(
            [golden_dataset, e2e_generations, system_retrieval_metrics, system_retrieval_quality],
            partition_key=evaluation_partition_key(version, day),
            instance=dagster_instance,
            resources=evaluation_resources(
                tmp_path,
                embedder,
                datasets=DatasetsResource(root=str(tmp_path / "datasets")),
                rag_system=RagSystemResource(kind="reference"),  # dataset.yaml says http
            ),
        )
    assert result.success
    warehouse = tmp_path / "warehouse"
    out = pd.read_parquet(warehouse / "e2e_generations" / version / f"{day}.parquet")
    assert set(out["system"]) == {"help-center-rag"}
    assert out["retrieved_doc_ids"].map(list).tolist() == [["d1", "d2"], ["d9", "d2"], ["d4"], []]
    assert out["error"].isna().tolist() == [True, True, True, False]
    assert out.loc[3, "error"].startswith("HTTP 401")
    metadata = result.asset_materializations_for_node("e2e_generations")[0].metadata
    assert metadata["n_errors"].value == 1
    assert metadata["http_calls"].value == 4 and metadata["http_retries"].value == 0

    per_query = pd.read_parquet(warehouse / "system_retrieval_metrics" / version / f"{day}.parquet")
    mrr = per_query.set_index("query_id")["mrr"].to_dict()
    assert mrr == {"q1": 1.0, "q2": 0.5, "q3": 0.0, "q4": 0.0}
    assert set(per_query["system"]) == {"help-center-rag"}

    written = b"".join(p.read_bytes() for p in warehouse.rglob("*") if p.is_file())
    events = json.dumps([str(e) for e in dagster_instance.all_logs(result.run_id)])
    assert written and SECRET.encode() not in written
    assert "help-center-rag: 1 of 4 question(s) are error rows; first: HTTP 401" in events
    assert SECRET not in events and SECRET not in str(result.all_events)
