"""Fault tolerance with real parts only: a faulty judge server, killed and concurrent runs.

Nothing of the pipeline is patched or mocked:

- the LLM judge talks HTTP (through litellm) to the loopback OpenAI-compatible server of
  `openai_server.py`, driven here by a per-prompt fault plan (429s, 5xx, hangs past the timeout,
  non-JSON HTTP bodies, unreadable and off-schema judge replies, valid replies);
- killed and concurrent runs are the real `rag-eval run` command in subprocesses sharing a
  persistent `DAGSTER_HOME` and warehouse (`SIGKILL` while a Parquet file is being written);
- the Parquet IO manager's atomic writes are raced from threads, and its partition paths are
  fed hostile partition keys.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    MultiPartitionKey,
    asset,
    build_input_context,
    materialize,
)
from upath import UPath

from rag_eval_pipeline.datasets.errors import InvalidVersionName
from rag_eval_pipeline.datasets.values import as_chunks
from rag_eval_pipeline.defs.dataset.assets import golden_dataset
from rag_eval_pipeline.defs.shared.io_managers import ParquetIOManager, ParquetIOManagerResource
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource, LLMResource
from rag_eval_pipeline.defs.tier2_generation.assets import (
    generation_judgments,
    generation_quality,
    ideal_context_generations,
)
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.judges.metrics import METRICS, metrics_for
from rag_eval_pipeline.judges.metrics.answer_relevance import answer_relevance_prompt
from rag_eval_pipeline.judges.metrics.answer_relevance_ragas import answer_relevance_ragas_prompt
from rag_eval_pipeline.judges.metrics.faithfulness import faithfulness_prompt
from rag_eval_pipeline.storage.parquet import LOCKS_FOLDER, write_tables_atomically
from rag_eval_pipeline_tests.conftest import DATASETS_DIR, PROJECT_ROOT, evaluation_resources
from rag_eval_pipeline_tests.openai_server import OpenAIServer, RecordedRequest, _Server

pytestmark = [pytest.mark.integration]

# ---------------------------------------------------------------------------------------------
# 1. Judge faults at pipeline level
# ---------------------------------------------------------------------------------------------

JUDGE_MODEL = "openai/test-judge"
VERSION, DATE = "demo-v1", "2026-11-20"
MAX_RETRIES = 2  # three attempts per prompt (429s are waited out without using them up)
RATE_LIMIT_BUDGET_S, RETRY_AFTER_S = 1.0, 0.2  # a prompt waits out 429s for 1 s at most
ALWAYS_429_ATTEMPTS = round(RATE_LIMIT_BUDGET_S / RETRY_AFTER_S) + 1


@dataclass(frozen=True)
class Plan:
    """What the server does with every attempt at one prompt.

    `faults` are the behaviours of the first attempts (`openai_server` vocabulary); afterwards
    every attempt gets `then`. `reply` is the kind of text a 200 carries: `valid` (the schema the
    prompt asks for), `garbage` (no JSON, no number) or `off_schema` (JSON, wrong keys).
    """

    name: str
    faults: tuple[str, ...] = ()
    then: str = "ok"
    reply: str = "valid"

    @property
    def recovers(self) -> bool:
        """Whether the row ends with a score (all faults fit into the retries, valid reply)."""
        return self.then == "ok" and len(self.faults) <= MAX_RETRIES and self.reply == "valid"

    @property
    def http_failure(self) -> bool:
        """Whether no reply text ever arrives (the call itself fails for good)."""
        return self.then != "ok" or len(self.faults) > MAX_RETRIES


# Weighted: a prompt's plan is PLAN_WHEEL[sha256(prompt) % len(PLAN_WHEEL)], deterministic for
# the shipped demo-v1 data and the deterministic offline generator.
PLAN_WHEEL: tuple[Plan, ...] = (
    *[Plan("ok")] * 10,
    Plan("429 then ok", ("429",)),
    Plan("500 then ok", ("500",)),
    Plan("hang then ok", ("hang",)),
    Plan("http garbage then ok", ("garbage",)),
    Plan("503, 429 then ok", ("503", "429")),
    Plan("always 429", then="429"),
    Plan("always 500", then="500"),
    Plan("garbage reply", reply="garbage"),
    Plan("429 then garbage reply", ("429",), reply="garbage"),
    Plan("off-schema reply", reply="off_schema"),
)
GARBAGE_REPLY = "Sorry, I am unable to evaluate this answer right now."


def prompt_digest(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


def plan_for(messages: list[dict[str, str]]) -> Plan:
    return PLAN_WHEEL[int(prompt_digest(messages), 16) % len(PLAN_WHEEL)]


def metric_of(messages: list[dict[str, str]]) -> str:
    system = messages[0]["content"]
    if '"supported"' in system:
        return "faithfulness"
    if '"noncommittal"' in system:
        return "answer_relevance_ragas"
    if "relevant" in system and '"score"' in system:
        return "answer_relevance"
    raise AssertionError(f"not a tier-2 judge prompt: {system[:80]!r}")


def judge_reply(messages: list[dict[str, str]]) -> str:
    """What a well-behaved (or, per plan, a broken) judge answers to one prompt."""
    plan = plan_for(messages)
    if plan.reply == "garbage":
        return GARBAGE_REPLY
    if plan.reply == "off_schema":
        return json.dumps({"verdict": "looks fine to me"})
    seed = int(prompt_digest(messages)[:8], 16)
    metric = metric_of(messages)
    if metric == "faithfulness":
        flags = [bool(seed >> bit & 1) for bit in range(1 + seed % 4)]
        claims = [{"claim": f"claim {i}", "supported": f} for i, f in enumerate(flags)]
        return json.dumps({"claims": claims})
    if metric == "answer_relevance":
        return json.dumps({"score": (seed % 11) / 10, "reason": "scripted"})
    answer = messages[-1]["content"].split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
    sentences = [s.strip() for s in answer.split(".") if s.strip()] or [answer]
    questions = [f"What is meant by: {sentence}?" for sentence in sentences[:3]]
    return json.dumps({"questions": questions, "noncommittal": False})


class PlannedServer(OpenAIServer):
    """The loopback server, choosing each request's behaviour from its prompt's `Plan`."""

    def __init__(self, hang_s: float) -> None:
        super().__init__(
            responder=lambda body: judge_reply(body["messages"]),
            faults=(),
            latency_s=0.0,
            hang_s=hang_s,
            retry_after_s=RETRY_AFTER_S,
        )
        self.attempts: Counter[str] = Counter()

    def _begin(self, record: RecordedRequest) -> str:
        behaviour = super()._begin(record)  # records the request, counts it in flight
        if record.body is None:
            return behaviour
        messages = record.body["messages"]
        digest = prompt_digest(messages)
        plan = plan_for(messages)
        with self._lock:
            attempt = self.attempts[digest]
            self.attempts[digest] += 1
        return plan.faults[attempt] if attempt < len(plan.faults) else plan.then

    def digests(self) -> Counter[str]:
        """How many requests each prompt received."""
        with self._lock:
            return Counter(
                prompt_digest(r.body["messages"]) for r in self.requests if r.body is not None
            )


@contextmanager
def run_planned_server(hang_s: float = 3.0) -> Iterator[PlannedServer]:
    state = PlannedServer(hang_s)
    server = _Server(state)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state._closing.set()
        server.shutdown()
        server.server_close()
        thread.join()


def judge_prompts(generations: pd.DataFrame) -> dict[tuple[str, str], list[dict[str, str]]]:
    """The prompt the LLM judge sends for every (metric, query_id) of the stored generations."""
    prompts = {}
    for row in generations.itertuples():
        prompts["faithfulness", row.query_id] = faithfulness_prompt(
            row.question, as_chunks(row.contexts), row.answer
        )
        prompts["answer_relevance", row.query_id] = answer_relevance_prompt(
            row.question, row.answer
        )
        prompts["answer_relevance_ragas", row.query_id] = answer_relevance_ragas_prompt(
            row.answer, 3
        )
    return prompts


TIER2_ASSETS = [golden_dataset, ideal_context_generations, generation_judgments, generation_quality]


def test_judge_faults_never_lose_rows_and_are_counted_in_the_error_rate(
    tmp_path: Path, dagster_instance: DagsterInstance, embedder: Embedder
) -> None:
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, [VERSION])
    key = evaluation_partition_key(VERSION, DATE)
    warehouse = tmp_path / "warehouse"
    with run_planned_server() as server:
        judge = LLMResource(
            model=JUDGE_MODEL,
            api_base=server.base_url,
            api_key="test-key",
            max_retries=MAX_RETRIES,
            rate_limit_budget_s=RATE_LIMIT_BUDGET_S,
            timeout_s=1.0,
            max_concurrency=32,
            cache_dir=str(tmp_path / "judge-cache"),
            # The plans fail prompts densely and count each prompt's attempts; the circuit
            # breaker, which would stop calling once most calls fail, is tested in
            # test_judge_outage.py.
            breaker_min_calls=0,
        )
        resources = evaluation_resources(tmp_path, embedder, judge_llm=judge)
        first = materialize(
            TIER2_ASSETS, partition_key=key, instance=dagster_instance, resources=resources
        )
        assert first.success
        first_requests = server.digests()
        generations, judgments, quality = (
            pd.read_parquet(warehouse / name / VERSION / f"{DATE}.parquet")
            for name in ("ideal_context_generations", "generation_judgments", "generation_quality")
        )
        server.reset()
        second = materialize(
            TIER2_ASSETS,
            selection=[generation_judgments, generation_quality],
            partition_key=key,
            instance=dagster_instance,
            resources=resources,
        )
        assert second.success
        second_requests = server.digests()

    prompts = judge_prompts(generations)
    plans = {cell: plan_for(messages) for cell, messages in prompts.items()}
    digests = {cell: prompt_digest(messages) for cell, messages in prompts.items()}
    assert {p.name for p in plans.values()} == {p.name for p in PLAN_WHEEL}, "every fault occurs"

    # Every prompt reached the server, with exactly the attempts its plan allows (a prompt
    # refused with 429 every time is retried after each Retry-After until its budget is spent).
    for cell, plan in plans.items():
        expected = MAX_RETRIES + 1 if plan.http_failure else len(plan.faults) + 1
        expected = ALWAYS_429_ATTEMPTS if plan.then == "429" else expected
        assert first_requests[digests[cell]] == expected, (cell, plan.name)
    assert set(first_requests) == set(digests.values())

    # Nothing lost: one row per (metric, question), for every judge metric.
    judged = judgments[judgments["metric"].isin(metrics_for("tier2"))]
    assert len(judged) == len(prompts) == 3 * len(generations)
    assert not judged.duplicated(["metric", "query_id"]).any()
    rows = judged.set_index(["metric", "query_id"])

    for cell, plan in plans.items():
        row = rows.loc[cell]
        if plan.recovers:
            assert pd.isna(row["error"]), (cell, plan.name, row["error"])
            assert 0.0 <= row["score"] <= 1.0, (cell, plan.name)
            assert row["raw_reply"] == judge_reply(prompts[cell])
        else:
            assert math.isnan(row["score"]), (cell, plan.name)
            assert isinstance(row["error"], str) and row["error"], (cell, plan.name)
        if plan.http_failure:
            assert row["error"].startswith("llm call failed: "), (cell, row["error"])
            assert pd.isna(row["raw_reply"])
            if plan.then == "429":
                assert "RateLimitError" in row["error"]
        elif plan.reply == "garbage":
            assert row["error"].startswith("unparseable reply: "), (cell, row["error"])
            assert row["raw_reply"] == GARBAGE_REPLY
        elif plan.reply == "off_schema":
            assert row["error"].startswith(("invalid reply: ", "unparseable reply: "))
            assert json.loads(row["raw_reply"]) == {"verdict": "looks fine to me"}

    # The quality table counts exactly the unrecoverable rows, and averages only the others.
    summary = quality.set_index("metric")
    for metric in metrics_for("tier2"):
        failed = sum(1 for (m, _), plan in plans.items() if m == metric and not plan.recovers)
        n_rows = len(generations)
        line = summary.loc[f"avg_{metric}"]
        assert (line["n_errors"], line["count"]) == (failed, n_rows - failed), metric
        assert line["error_rate"] == pytest.approx(failed / n_rows)
        scores = rows.loc[metric]["score"].dropna()
        assert line["mean"] == pytest.approx(scores.mean())
    assert (
        summary.loc[["avg_rouge1_f", "avg_bleu", "avg_semantic_similarity"], "n_errors"].eq(0).all()
    )

    # Re-run: usable replies come from the cache; every row that ended in an error is asked
    # again (calls that never got a reply, and replies that could not be used, which are not
    # kept in the cache), and each fails the same way. The server's scripted transient faults
    # were used up by the first run, so a reply that arrived then arrives at the first attempt.
    errored = {c: plan for c, plan in plans.items() if not plan.recovers}
    assert set(second_requests) == {digests[c] for c in errored}
    for cell, plan in errored.items():
        expected = MAX_RETRIES + 1 if plan.http_failure else 1
        expected = ALWAYS_429_ATTEMPTS if plan.then == "429" else expected
        assert second_requests[digests[cell]] == expected, (cell, plan.name)
    rerun = pd.read_parquet(warehouse / "generation_judgments" / VERSION / f"{DATE}.parquet")
    rerun_rows = rerun[rerun["metric"].isin(metrics_for("tier2"))].set_index(["metric", "query_id"])
    pd.testing.assert_series_equal(
        rerun_rows["score"].sort_index(), rows["score"].sort_index(), check_exact=False
    )
    recovered = [cell for cell, plan in plans.items() if plan.recovers]
    assert rerun_rows.loc[recovered, "cached"].all()

    # The asset's metadata reports the calls and failures the server saw. On a loaded machine an
    # attempt may hit the 1 s timeout before its request is written (the client counts it, the
    # server never sees it): allow two such.
    (materialization,) = first.asset_materializations_for_node("generation_judgments")
    metadata = {k: v.value for k, v in materialization.metadata.items()}
    assert 0 <= metadata["judge_calls"] - sum(first_requests.values()) <= 2
    assert metadata["judge_errors"] == sum(plan.http_failure for plan in plans.values())
    assert metadata["n_errors"] == sum(not plan.recovers for plan in plans.values())


# ---------------------------------------------------------------------------------------------
# 2 and 3. Killed and concurrent runs: real processes, persistent instance and warehouse
# ---------------------------------------------------------------------------------------------

# Tier 1 of the SciFact version: no embedding model to load, so a worker process spends its
# time in Dagster and Parquet, and every asset is deterministic (seeded bootstrap).
RUN_VERSION, RUN_DATE = "scifact-test", "2026-11-20"
TIER1 = [
    "golden_dataset",
    "corpus_embeddings",
    "retrieval_runs",
    "retrieval_metrics",
    "retrieval_quality",
]
WORKER_TIMEOUT_S = 600
LEFTOVER_NAME = re.compile(rf"^\.{RUN_DATE}\..+\.(tmp|old)$")


@dataclass
class Deployment:
    """A persistent `DAGSTER_HOME`, data folder and warehouse, as `rag-eval run` would use."""

    root: Path
    home: Path
    data: Path

    def env(self, warehouse: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_EVAL_")}
        env.update(
            DAGSTER_HOME=str(self.home),
            RAG_EVAL_DATA_DIR=str(self.data),
            RAG_EVAL_WAREHOUSE=str(warehouse),
            PYTHONPATH=str(PROJECT_ROOT),
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
        )
        return env

    def start(self, warehouse: Path) -> Worker:
        """Launch the worker; its output goes to a file (a full pipe would block it)."""
        log = self.root / f"worker-{uuid.uuid4().hex[:8]}.log"
        with open(log, "wb") as sink:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rag_eval_pipeline_tests.fault_tolerance_worker",
                    RUN_VERSION,
                    RUN_DATE,
                    *TIER1,
                ],
                cwd=self.root,
                env=self.env(warehouse),
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        return Worker(process, log)


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log: Path


def finish(worker: Worker) -> tuple[int, str]:
    """Wait for the worker (killing it after `WORKER_TIMEOUT_S`): exit code and output."""
    try:
        worker.process.wait(timeout=WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        worker.process.kill()
        worker.process.wait()
    return worker.process.returncode, worker.log.read_text(errors="replace")


def tail(output: str, lines: int = 40) -> str:
    return "\n".join(output.splitlines()[-lines:])


def visible_parquet(warehouse: Path) -> dict[str, Path]:
    """Every Parquet file the IO manager or a reader would use (no hidden path component)."""
    return {
        str(path.relative_to(warehouse)): path
        for path in sorted(warehouse.rglob("*.parquet"))
        if not any(part.startswith(".") for part in path.relative_to(warehouse).parts)
    }


def hidden_leftovers(warehouse: Path) -> list[Path]:
    """Hidden entries a write left, but for the warehouse's lock files (`LOCKS_FOLDER`)."""
    return sorted(
        p
        for p in warehouse.rglob(".*")
        if not p.parent.name.startswith(".") and p != warehouse / LOCKS_FOLDER
    )


def read_all(warehouse: Path) -> dict[str, pd.DataFrame]:
    return {name: pd.read_parquet(path) for name, path in visible_parquet(warehouse).items()}


def assert_same_tables(actual: dict[str, pd.DataFrame], expected: dict[str, pd.DataFrame]) -> None:
    assert sorted(actual) == sorted(expected)
    for name, frame in expected.items():
        pd.testing.assert_frame_equal(actual[name], frame, obj=name)


@dataclass
class Baseline:
    deployment: Deployment
    warehouse: Path
    tables: dict[str, pd.DataFrame]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Baseline:
    """One successful, uninterrupted run of Tier 1 in a fresh deployment."""
    root = tmp_path_factory.mktemp("deployment")
    (root / "data" / "datasets").mkdir(parents=True)
    (root / "data" / "datasets" / RUN_VERSION).symlink_to(DATASETS_DIR / RUN_VERSION)
    (root / "home").mkdir()
    shutil.copy(PROJECT_ROOT / "dagster.yaml", root / "home" / "dagster.yaml")
    deployment = Deployment(root, root / "home", root / "data")
    warehouse = root / "warehouse-a"
    code, output = finish(deployment.start(warehouse))
    assert code == 0, tail(output)
    tables = read_all(warehouse)
    assert {name.split("/")[0] for name in tables} == set(TIER1)
    return Baseline(deployment, warehouse, tables)


def test_sigkill_mid_write_leaves_only_readable_parquet_and_a_rerun_completes(
    baseline: Baseline,
) -> None:
    warehouse = baseline.warehouse
    before = {name: path.stat().st_mtime_ns for name, path in visible_parquet(warehouse).items()}
    worker = baseline.deployment.start(warehouse)
    trigger = None
    try:
        deadline = time.monotonic() + WORKER_TIMEOUT_S
        while worker.process.poll() is None and time.monotonic() < deadline and not trigger:
            temporary = [p for p in warehouse.rglob(".*.tmp")]
            changed = [
                name
                for name, path in visible_parquet(warehouse).items()
                if path.stat().st_mtime_ns != before.get(name)
            ]
            if temporary or changed:
                worker.process.kill()  # SIGKILL: no cleanup handler runs
                trigger = f"temporary files {temporary}" if temporary else f"replaced {changed}"
            else:
                time.sleep(0.001)
    finally:
        if worker.process.poll() is None and trigger is None:
            worker.process.kill()
        code, output = finish(worker)
    assert trigger is not None, "the run never started writing:\n" + tail(output)
    assert code == -signal.SIGKILL, f"the run finished before the kill:\n{tail(output)}"
    print(f"killed on {trigger}; leftovers: {[p.name for p in hidden_leftovers(warehouse)]}")

    # Whatever the kill interrupted, every Parquet file a reader can see is whole and identical
    # to the last good run's; interrupted writes left only hidden, non-Parquet-named leftovers.
    assert_same_tables(read_all(warehouse), baseline.tables)
    for leftover in hidden_leftovers(warehouse):
        assert LEFTOVER_NAME.match(leftover.name), (trigger, leftover)
        assert not leftover.name.endswith(".parquet")

    code, output = finish(baseline.deployment.start(warehouse))
    assert code == 0, tail(output)
    assert "finished ok" in output
    assert_same_tables(read_all(warehouse), baseline.tables)


def test_two_concurrent_runs_of_one_partition_both_succeed_with_the_single_run_result(
    baseline: Baseline,
) -> None:
    warehouse = baseline.deployment.root / "warehouse-b"
    workers = [baseline.deployment.start(warehouse) for _ in range(2)]
    outcomes = [finish(worker) for worker in workers]
    for code, output in outcomes:
        assert code == 0, tail(output)
    assert_same_tables(read_all(warehouse), baseline.tables)
    assert hidden_leftovers(warehouse) == []


# ---------------------------------------------------------------------------------------------
# The Parquet IO manager under concurrency (threads, real files)
# ---------------------------------------------------------------------------------------------

GOLDEN_TABLES = {
    "queries": pd.DataFrame({"query_id": [f"q{i}" for i in range(200)], "question": "why?"}),
    "qrels": pd.DataFrame({"query_id": [f"q{i}" for i in range(200)], "relevance": 1}),
}


def test_concurrent_writers_of_one_table_folder_all_succeed(tmp_path: Path) -> None:
    """Two runs of one partition write the golden dataset folder at the same time."""
    target = UPath(tmp_path / "golden_dataset" / "v1" / "2026-11-21")
    errors: list[str] = []

    def write_repeatedly() -> None:
        for _ in range(25):
            try:
                write_tables_atomically(GOLDEN_TABLES, target)
            except Exception as error:  # collected: the assertion below shows every kind
                errors.append(repr(error))

    threads = [threading.Thread(target=write_repeatedly) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert Counter(errors) == Counter()
    assert sorted(p.name for p in (tmp_path / "golden_dataset" / "v1").iterdir()) == ["2026-11-21"]
    for name, frame in GOLDEN_TABLES.items():
        pd.testing.assert_frame_equal(pd.read_parquet(Path(target.path) / f"{name}.parquet"), frame)


def test_reading_a_table_folder_while_it_is_rewritten_never_finds_it_missing(
    tmp_path: Path,
) -> None:
    """A downstream step loads the golden dataset while another run rewrites it."""
    manager = ParquetIOManager(base_path=UPath(tmp_path))
    key = AssetKey("golden_dataset")
    target = UPath(tmp_path / "golden_dataset" / "v1" / "2026-11-21")
    write_tables_atomically(GOLDEN_TABLES, target)
    done = threading.Event()
    outcomes: Counter[str] = Counter()

    def rewrite() -> None:
        for _ in range(300):
            write_tables_atomically(GOLDEN_TABLES, target)
        done.set()

    writer = threading.Thread(target=rewrite)
    writer.start()
    context = build_input_context(asset_key=key)
    while not done.is_set():
        try:
            loaded = manager.load_from_path(context, UPath(str(target) + ".parquet"))
            outcomes["complete" if sorted(loaded) == ["qrels", "queries"] else "partial"] += 1
        except Exception as error:
            outcomes[type(error).__name__] += 1
    writer.join()
    assert set(outcomes) == {"complete"}, outcomes


# ---------------------------------------------------------------------------------------------
# 5. Path traversal: partition keys and dataset version names never leave their base folder
# ---------------------------------------------------------------------------------------------

HOSTILE_NAMES = [
    "../x",
    "..",
    ".",
    "a/../../b",
    "%2e%2e",
    "%2E%2E/x",
    "/etc",
    "a/b",
    "..\\x",
    "x|y",
    "x,y",
    " x",
    "x\n",
    "",
    ".hidden",
    "-rf",
    "a" * 101,
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_version_names_are_refused_by_partition_key_and_loader(
    name: str, tmp_path: Path
) -> None:
    root = tmp_path / "datasets"
    root.mkdir()
    # A perfectly valid dataset just outside the datasets root: a traversal would load it.
    shutil.copytree(DATASETS_DIR / "scifact-test", tmp_path / "x")
    with pytest.raises(InvalidVersionName):
        evaluation_partition_key(name, "2026-11-21")
    with pytest.raises(InvalidVersionName):
        DatasetsResource(root=str(root)).load(name)


HOSTILE_PARTITIONS = [
    "../x",
    "..",
    "a/../../b",
    "../../../../../../etc/passwd",
    "%2e%2e",
    "x/../..",
    "./../x",
    "../%2e%2e/..",
    "..//..",
    "/etc/passwd",
    "//etc/passwd",
]


@pytest.mark.parametrize("partition", HOSTILE_PARTITIONS)
def test_io_manager_partition_paths_stay_inside_the_base(partition: str, tmp_path: Path) -> None:
    base = tmp_path / "warehouse"
    manager = ParquetIOManager(base_path=UPath(base))
    path = manager.make_safe_partition_path(UPath(base) / "asset", partition)
    resolved = Path(os.path.normpath(path.path))
    assert resolved.is_relative_to(base / "asset"), resolved


def _probe_asset() -> Any:
    from rag_eval_pipeline.defs.shared.partitions import evaluation_partitions

    @asset(partitions_def=evaluation_partitions, name="probe")
    def probe() -> pd.DataFrame:
        """Like every quality asset: stores a frame without looking at the partition key."""
        return pd.DataFrame({"value": [1.0]})

    return probe


@pytest.mark.parametrize(
    "make_version",
    [
        lambda outside: "../../outside",
        lambda outside: "a/../../../outside",
        lambda outside: str(outside),  # an absolute path
    ],
)
def test_materializing_a_hostile_dynamic_partition_writes_inside_the_warehouse(
    make_version: Any, tmp_path: Path, dagster_instance: DagsterInstance
) -> None:
    """Dynamic partitions can be added by hand (UI, API): the IO manager must contain them."""
    warehouse = tmp_path / "deep" / "warehouse"
    outside = tmp_path / "outside"
    version = make_version(outside)
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, [version])
    result = materialize(
        [_probe_asset()],
        partition_key=MultiPartitionKey({DATASET_VERSION: version, "date": "2026-11-21"}),
        instance=dagster_instance,
        resources={"io_manager": ParquetIOManagerResource(base_path=str(warehouse))},
    )
    assert result.success
    written = [p for p in tmp_path.rglob("*.parquet")]
    assert written, "nothing written"
    for path in written:
        assert path.is_relative_to(warehouse), path
    assert not outside.exists()


# ---------------------------------------------------------------------------------------------
# Found along the way
# ---------------------------------------------------------------------------------------------


def test_cli_run_with_select_materializes_the_selection(baseline: Baseline) -> None:
    """README: `rag-eval run --select 'retrieval_quality+'` (a Dagster asset selection)."""
    warehouse = baseline.deployment.root / "warehouse-cli"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "rag_eval_pipeline.cli",
            "run",
            "--dataset-version",
            RUN_VERSION,
            "--date",
            RUN_DATE,
            "--select",
            "key:golden_dataset",
        ],
        cwd=baseline.deployment.root,
        env=baseline.deployment.env(warehouse),
        capture_output=True,
        text=True,
        timeout=WORKER_TIMEOUT_S,
    )
    assert completed.returncode == 0, tail(completed.stdout + completed.stderr)
    assert sorted(visible_parquet(warehouse)) == sorted(
        name for name in baseline.tables if name.startswith("golden_dataset/")
    )


def test_ragas_answer_relevance_stays_in_the_unit_interval_for_off_topic_questions(
    embedder: Embedder,
) -> None:
    """The judge contract: `score` is in [0, 1]; a cosine can be negative."""
    from rag_eval_pipeline.judges.judge import LLMJudge
    from rag_eval_pipeline.llm.client import LLMClient, LLMConfig
    from rag_eval_pipeline_tests.openai_server import run_openai_server

    off_topic = json.dumps({"questions": ["Which planet is largest?"], "noncommittal": False})
    with run_openai_server(responder=lambda _: off_topic) as server:
        client = LLMClient(LLMConfig(model=JUDGE_MODEL, api_base=server.base_url, api_key="k"))
        frame = LLMJudge(client, embedder).score(
            METRICS["answer_relevance_ragas"],
            {
                "question": ["How do I rotate an API key?"],
                "answer": ["Rotate keys under Settings > API keys."],
            },
        )
    assert frame["error"].isna().all(), frame["error"].tolist()
    assert 0.0 <= frame["score"].iloc[0] <= 1.0, frame["score"].iloc[0]
