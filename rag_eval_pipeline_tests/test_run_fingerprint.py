"""`rag-eval run` skips a partition only when what is stored came from the inputs there now.

The fingerprint is checked against each input it covers (dataset files, environment, the
earlier scorecards that form the regression baseline), and the CLI itself is run in fresh
processes on a persistent temporary deployment: materialize, skip, force, re-run after the
dataset or the stored outputs changed, re-run after a revert (the latest materialization is the
one compared, not any earlier run), and re-run when a stored output does not read back.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from upath import UPath

import rag_eval_pipeline
from rag_eval_pipeline.embedding.embedder import DEFAULT_MODEL
from rag_eval_pipeline.evaluation.run_fingerprint import (
    RESULT_ENVIRONMENT,
    RESULT_ENVIRONMENT_PREFIXES,
    outputs_present,
    partition_fingerprint,
)
from rag_eval_pipeline.settings import OFFLINE_MODEL
from rag_eval_pipeline.storage.parquet import write_parquet_atomically
from rag_eval_pipeline.storage.readback import output_problem
from rag_eval_pipeline.storage.warehouse import WarehouseStore
from rag_eval_pipeline_tests.conftest import DATASETS_DIR, rag_eval, rag_eval_process

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VERSION = "demo-v1"
DATE = "2026-11-20"


@pytest.fixture
def version_dir(tmp_path: Path) -> Path:
    copy = tmp_path / "datasets" / VERSION
    shutil.copytree(DATASETS_DIR / VERSION, copy)
    return copy


def fingerprint(version_dir: Path, store: WarehouseStore, **env: str) -> str | None:
    return partition_fingerprint(
        version_dir=version_dir, version=VERSION, date=DATE, store=store, environ=env
    )


def test_fingerprint_changes_with_every_input_it_covers(version_dir: Path, tmp_path: Path) -> None:
    store = WarehouseStore(str(tmp_path / "warehouse"))
    base = fingerprint(version_dir, store)
    assert base is not None
    assert fingerprint(version_dir, store) == base
    assert fingerprint(version_dir, store, RAG_EVAL_SKIP_TOP="2") != base
    assert fingerprint(version_dir, store, OPENAI_API_KEY="sk-unrelated") == base

    scorecard = pd.DataFrame({"metric": ["mrr"], "value": [0.5]})
    write_parquet_atomically(scorecard, store.scorecard_path(VERSION, "2026-11-21"))
    assert fingerprint(version_dir, store) == base, "a later date is not this one's baseline"
    write_parquet_atomically(scorecard, store.scorecard_path(VERSION, "2026-11-19"))
    with_baseline = fingerprint(version_dir, store)
    assert with_baseline != base
    write_parquet_atomically(
        scorecard.assign(value=0.4), store.scorecard_path(VERSION, "2026-11-19")
    )
    assert fingerprint(version_dir, store) not in {base, with_baseline}

    queries = version_dir / "queries.jsonl"
    queries.write_bytes(queries.read_bytes().replace(b"?", b" ?", 1))
    assert fingerprint(version_dir, store) not in {base, with_baseline}


# The RAG_EVAL_* names the package reads that change where or when, not what a run stores.
NOT_RESULTS = {
    "RAG_EVAL_CACHE": "caches keyed by content",
    "RAG_EVAL_STAGED": "staged interactions keyed by the files' fingerprint",
    "RAG_EVAL_DATASETS_MIRROR": "a local copy; the fingerprint hashes its files",
    "RAG_EVAL_WAREHOUSE": "where outputs go; its scorecards are hashed, missing outputs re-run",
    "RAG_EVAL_SCHEDULE_CRON": "when the schedule ticks",
    "RAG_EVAL_ALERT_WEBHOOK": "read by the alert sensor",
    "RAG_EVAL_ALERT_STYLE": "read by the alert sensor",
    "RAG_EVAL_UI_URL": "read by the alert sensor",
    "RAG_EVAL_STAGED_KEEP_DAYS": "when unused staged copies are removed",
    "RAG_EVAL_STAGED_GRACE_S": "when unpublished staged generations are removed",
    "RAG_EVAL_CACHE_LOCK_TIMEOUT_S": "how long a cache lock is awaited before the cache is skipped",
}
# A value each variable can take without failing the fingerprint's own reads.
SAFE_VALUES = {
    "RAG_EVAL_STAGED_KEEP_DAYS": "30",
    "RAG_EVAL_STAGED_GRACE_S": "7200",
    "RAG_EVAL_CACHE_LOCK_TIMEOUT_S": "5",
    "RAG_EVAL_EMBEDDER_MODEL": DEFAULT_MODEL,
    "RAG_EVAL_GENERATOR_MODEL": OFFLINE_MODEL,
    "RAG_EVAL_JUDGE_MODEL": OFFLINE_MODEL,
    "RAG_EVAL_SYSTEM": "reference",
}


def test_only_the_variables_that_change_results_change_the_fingerprint(
    version_dir: Path, tmp_path: Path
) -> None:
    store = WarehouseStore(str(tmp_path / "warehouse"))
    base = fingerprint(version_dir, store)
    unrelated = {name: SAFE_VALUES.get(name, str(tmp_path / "elsewhere")) for name in NOT_RESULTS}
    assert fingerprint(version_dir, store, **unrelated, RAG_EVAL_LOG_LEVEL="DEBUG") == base
    header = f"{RESULT_ENVIRONMENT_PREFIXES[0]}TOKEN"
    for name in [*sorted(RESULT_ENVIRONMENT), header]:
        changed = fingerprint(version_dir, store, **{name: SAFE_VALUES.get(name, "7")})
        assert changed not in {base, None}, name


def test_every_variable_the_package_reads_is_classified() -> None:
    package = Path(rag_eval_pipeline.__file__).parent
    names = {
        name
        for path in package.rglob("*.py")
        for name in re.findall(r"RAG_EVAL_[A-Z0-9_]*", path.read_text(encoding="utf-8"))
    }
    names -= {"RAG_EVAL_"}  # the prefix in prose
    unclassified = {
        name
        for name in names
        if name not in RESULT_ENVIRONMENT
        and name not in NOT_RESULTS
        and not name.startswith(RESULT_ENVIRONMENT_PREFIXES)
    }
    assert unclassified == set()
    assert not RESULT_ENVIRONMENT & set(NOT_RESULTS)
    assert RESULT_ENVIRONMENT | set(NOT_RESULTS) <= names  # no stale entry


def test_a_pinned_baseline_version_and_the_composite_weights_are_covered(
    version_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = WarehouseStore(str(tmp_path / "warehouse"))
    pinned = {"RAG_EVAL_BASELINE_VERSION": "release-1"}
    before = fingerprint(version_dir, store, **pinned)
    scorecard = pd.DataFrame({"metric": ["mrr"], "value": [0.5]})
    write_parquet_atomically(scorecard, store.scorecard_path("release-1", "2026-11-25"))
    rematerialized = fingerprint(version_dir, store, **pinned)
    assert rematerialized != before, "the pinned version's scorecards are the baseline"
    assert fingerprint(version_dir, store) == fingerprint(version_dir, store)

    weights = tmp_path / "elsewhere" / "composite.yaml"
    weights.parent.mkdir()
    weights.write_text("weights: {faithfulness: 1.0}\n")
    monkeypatch.setattr("rag_eval_pipeline.evaluation.run_fingerprint.COMPOSITE_FILE", weights)
    with_weights = fingerprint(version_dir, store, **pinned)
    weights.write_text("weights: {faithfulness: 0.5, answer_relevance: 0.5}\n")
    assert fingerprint(version_dir, store, **pinned) != with_weights


def test_a_user_callable_is_never_fingerprinted(version_dir: Path, tmp_path: Path) -> None:
    store = WarehouseStore(str(tmp_path / "warehouse"))
    assert fingerprint(version_dir, store, RAG_EVAL_SYSTEM="callable") is None
    (version_dir / "dataset.yaml").write_text("system: callable\n")
    assert fingerprint(version_dir, store) is None
    (version_dir / "dataset.yaml").write_text("system: logged\n")
    assert fingerprint(version_dir, store, RAG_EVAL_SYSTEM="callable") is not None


def test_outputs_present_needs_every_asset_file_or_table_folder(tmp_path: Path) -> None:
    warehouse = UPath(tmp_path / "warehouse")
    both = ["golden_dataset", "retrieval_runs"]
    (warehouse / "golden_dataset" / VERSION / DATE).mkdir(parents=True)
    (warehouse / "retrieval_runs" / VERSION).mkdir(parents=True)
    assert outputs_present(warehouse, ["golden_dataset"], VERSION, DATE)
    assert not outputs_present(warehouse, both, VERSION, DATE)
    (warehouse / "retrieval_runs" / VERSION / f"{DATE}.parquet").write_bytes(b"")
    assert outputs_present(warehouse, both, VERSION, DATE)
    report = tmp_path / "reports" / VERSION / f"{DATE}.html"
    assert not outputs_present(warehouse, both, VERSION, DATE, files=[report])
    report.parent.mkdir(parents=True)
    report.write_text("<html></html>")
    assert outputs_present(warehouse, both, VERSION, DATE, files=[report])


def test_cli_skips_an_unchanged_partition_and_reruns_on_change(
    version_dir: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    warehouse = tmp_path / "warehouse"

    def run(*extra: str) -> str:
        return rag_eval(
            tmp_path,
            home,
            "run",
            "--dataset-version",
            VERSION,
            "--date",
            DATE,
            "--select",
            "key:golden_dataset",
            *extra,
        )

    assert "materializing demo-v1|2026-11-20" in run()
    assert "demo-v1|2026-11-20 is up to date" in run()
    assert "materializing" in run("--force")
    assert "is up to date" in run()

    shutil.rmtree(warehouse / "golden_dataset")
    assert "materializing" in run(), "outputs deleted from the warehouse"

    queries = version_dir / "queries.jsonl"
    queries.write_bytes(queries.read_bytes().replace(b"?", b" ?", 1))
    assert "materializing" in run(), "dataset changed"
    assert "is up to date" in run()


def test_output_problem_reads_the_footer_and_compares_the_row_count(tmp_path: Path) -> None:
    path = UPath(tmp_path / "metrics" / f"{DATE}.parquet")
    write_parquet_atomically(pd.DataFrame({"value": [0.5, 0.25, 1.0]}), path)
    assert output_problem(path, rows=3) is None
    assert output_problem(path, rows=2) == f"{path} holds 3 rows, its materialization recorded 2"
    path.write_bytes(path.read_bytes()[:-9])
    assert "does not read back as Parquet" in output_problem(path, rows=3)
    path.write_bytes(b"")
    assert str(path) in output_problem(path)
    assert output_problem(UPath(tmp_path / "absent.parquet")).endswith("is missing")


def run_partition(tmp_path: Path, home: Path, select: str, *extra: str) -> str:
    return rag_eval(
        tmp_path, home, "run", "--dataset-version", VERSION, "--date", DATE, "--select", select,
        *extra,
    )  # fmt: skip


def test_a_revert_runs_again_and_restores_the_original_values(
    version_dir: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    stored = tmp_path / "warehouse" / "retrieval_metrics" / VERSION / f"{DATE}.parquet"
    qrels = version_dir / "qrels.csv"
    original = qrels.read_bytes()

    assert "materializing" in run_partition(tmp_path, home, "*retrieval_metrics")
    first = pd.read_parquet(stored)
    lines = original.decode().splitlines(keepends=True)
    qrels.write_text("".join(lines[:1] + lines[1::2]))  # half the judgments gone
    assert "materializing" in run_partition(tmp_path, home, "*retrieval_metrics")
    changed = pd.read_parquet(stored)
    assert not changed.equals(first)

    qrels.write_bytes(original)
    output = run_partition(tmp_path, home, "*retrieval_metrics")
    assert "is up to date" not in output and "materializing" in output
    pd.testing.assert_frame_equal(pd.read_parquet(stored), first)
    assert "is up to date" in run_partition(tmp_path, home, "*retrieval_metrics")


def test_an_output_that_does_not_read_back_runs_again(version_dir: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    tables = tmp_path / "warehouse" / "golden_dataset" / VERSION / DATE
    assert "materializing" in run_partition(tmp_path, home, "key:golden_dataset")
    (tables / "queries.parquet").write_bytes(b"")
    assert "materializing" in run_partition(tmp_path, home, "key:golden_dataset"), "0 bytes"
    queries = pd.read_parquet(tables / "queries.parquet")
    assert len(queries) > 1
    queries.iloc[:1].to_parquet(tables / "queries.parquet", index=False)
    assert "materializing" in run_partition(tmp_path, home, "key:golden_dataset"), "1 row"
    assert "is up to date" in run_partition(tmp_path, home, "key:golden_dataset")


def test_a_scorecard_that_does_not_read_back_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    scorecard = tmp_path / "warehouse" / "evaluation_scorecard" / VERSION / f"{DATE}.parquet"
    scorecard.parent.mkdir(parents=True)
    scorecard.write_bytes(b"")
    completed = rag_eval_process(
        tmp_path, home, "scorecard", "--dataset-version", VERSION, "--date", DATE
    )
    assert completed.returncode == 1
    assert completed.stderr.count("\n") == 1, completed.stderr
    assert str(scorecard) in completed.stderr and "Traceback" not in completed.stderr
    assert "rag-eval run --force" in completed.stderr
