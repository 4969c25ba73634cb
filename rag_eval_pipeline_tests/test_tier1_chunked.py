"""Tier 1 in bounded memory: chunked reading, validation, storage and scoring equal the whole.

The chunked paths (query_chunks, RunScorer, the chunked TREC run validation, TableBatches in
the Parquet warehouse) must give exactly what the whole-table paths give, which
test_retrieval_metrics.py checks against pytrec_eval.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from upath import UPath

from rag_eval_pipeline.datasets import golden, readers
from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.evaluation.retrieval import RUN_TABLE_COLUMNS, evaluate_runs
from rag_eval_pipeline.metrics.retrieval import RunScorer, evaluate_run
from rag_eval_pipeline.storage.batches import TableBatches, query_chunks
from rag_eval_pipeline.storage.parquet import (
    read_batches,
    read_tables,
    write_parquet_atomically,
    write_tables_atomically,
)
from rag_eval_pipeline_tests.test_retrieval_metrics import (
    assert_matches_pytrec_eval,
    random_tables,
)

pytestmark = [pytest.mark.unit]


def grouped_by_query(run: pd.DataFrame) -> pd.DataFrame:
    """The run with each query's rows together (row order within a query kept)."""
    return run.sort_values("query_id", kind="stable", ignore_index=True)


@pytest.mark.parametrize("chunk_rows", [1, 7, 40, 10_000])
@pytest.mark.parametrize("seed", range(8))
def test_run_scored_in_chunks_equals_the_whole_run(seed: int, chunk_rows: int) -> None:
    run, qrels = random_tables(seed, num_queries=40)
    run = grouped_by_query(run)
    whole = assert_matches_pytrec_eval(run, qrels)
    scorer = RunScorer(qrels, list(whole.columns[1:]))
    chunks = list(query_chunks(TableBatches.of(run, 5).frames(), ["query_id"], chunk_rows))
    for chunk in chunks:
        scorer.add(chunk)
    pd.testing.assert_frame_equal(scorer.result(), whole)
    assert len(chunks) > 1 or chunk_rows == 10_000


def test_a_query_split_between_chunks_is_an_error() -> None:
    run, qrels = random_tables(3, num_queries=40)
    run = grouped_by_query(run)
    query = run["query_id"].value_counts().index[0]  # the longest ranking
    rows = np.flatnonzero(run["query_id"] == query)
    scorer = RunScorer(qrels)
    scorer.add(run.iloc[: rows[1]])
    with pytest.raises(ValueError, match=f"query_id '{query}' in two chunks"):
        scorer.add(run.iloc[rows[1] :])


def test_query_chunks_keep_every_row_in_order_and_never_split_a_stretch() -> None:
    frame = pd.DataFrame(
        {
            "system": ["a"] * 6 + ["b"] * 6,
            "query_id": ["1", "1", "1", "2", "3", "3", "3", "3", "4", "4", "4", "5"],
            "doc_id": [f"d{i}" for i in range(12)],
        }
    )
    for rows in (1, 2, 4, 100):
        for batch in (1, 3, 12):
            chunks = list(
                query_chunks(TableBatches.of(frame, batch).frames(), ["system", "query_id"], rows)
            )
            pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), frame)
            keys = [set(zip(c["system"], c["query_id"], strict=True)) for c in chunks]
            for left, right in itertools.pairwise(keys):
                assert not left & right, (rows, batch)


def test_evaluate_runs_in_chunks_equals_the_whole_table() -> None:
    run_a, qrels = random_tables(5, num_queries=40)
    run_b, _ = random_tables(6, num_queries=40)
    runs = pd.concat(
        [
            grouped_by_query(run_a).assign(source="logged_run", system="a"),
            grouped_by_query(run_b).assign(source="logged_run", system="b"),
            grouped_by_query(run_a).assign(source="real_users", system="real-users"),
        ],
        ignore_index=True,
    ).assign(rank=1)[RUN_TABLE_COLUMNS]
    real_user_qrels = qrels.iloc[::3]
    whole = evaluate_runs(runs, qrels, real_user_qrels)
    chunked = evaluate_runs(TableBatches.of(runs, 17), qrels, real_user_qrels)
    pd.testing.assert_frame_equal(chunked, whole)
    assert set(whole["system"]) == {"a", "b", "real-users"}
    expected_a = evaluate_run(run_a, qrels)
    got_a = whole[whole["system"] == "a"].drop(columns=["source", "system"])
    pd.testing.assert_frame_equal(got_a.reset_index(drop=True), expected_a)


def test_table_batches_round_trip_through_parquet_one_row_group_per_chunk(
    tmp_path: Path,
) -> None:
    frame = pd.DataFrame({"query_id": [str(i // 3) for i in range(50)], "score": np.arange(50) / 7})
    path = UPath(tmp_path / "runs.parquet")
    write_parquet_atomically(TableBatches.of(frame, 10), path)
    assert pq.ParquetFile(path.path).num_row_groups == 5
    stored = read_batches(path)
    assert stored.num_rows == 50
    pd.testing.assert_frame_equal(stored.to_pandas(), frame)
    write_tables_atomically(
        {"runs": TableBatches.of(frame, 10), "small": frame.head(2)}, UPath(tmp_path / "tables")
    )
    tables = read_tables(UPath(tmp_path / "tables"))
    assert isinstance(tables["runs"], TableBatches)
    assert isinstance(tables["small"], pd.DataFrame)
    pd.testing.assert_frame_equal(tables["runs"].to_pandas(), frame)


def write_version(folder: Path, run_lines: list[str]) -> Path:
    (folder / "runs").mkdir(parents=True)
    queries = sorted({line.split()[0] for line in run_lines} | {"q9"})
    (folder / "queries.jsonl").write_text(
        "".join(f'{{"query_id": "{q}", "question": "question {q}"}}\n' for q in queries)
    )
    (folder / "qrels.trec").write_text("q1 0 d1 1\nq2 0 d2 2\n")
    (folder / "runs" / "bm25.trec").write_text("".join(line + "\n" for line in run_lines))
    return folder


def run_lines(n_queries: int, depth: int) -> list[str]:
    return [
        f"q{q} Q0 d{d} {d + 1} {1 / (d + 1):.4f} bm25"
        for q in range(1, n_queries + 1)
        for d in range(depth)
    ]


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrow blocks of 64 bytes and chunks of 5 rows: many chunks in a small file."""
    monkeypatch.setattr(golden, "RUN_BLOCK_BYTES", 64)
    monkeypatch.setattr(golden, "RUN_CHUNK_ROWS", 5)


@pytest.mark.usefixtures("small_chunks")
def test_a_run_validated_in_chunks_loads_as_read_whole(tmp_path: Path) -> None:
    lines = run_lines(8, 4)
    dataset = load_dataset(write_version(tmp_path / "v1", lines))
    runs = dataset.runs.to_pandas()
    assert runs["query_id"].tolist() == [line.split()[0] for line in lines]
    assert runs["doc_id"].tolist() == [line.split()[2] for line in lines]
    assert runs["rank"].tolist() == [int(line.split()[3]) for line in lines]
    assert dataset.runs.num_rows == len(lines)
    assert dataset.statistics()["n_runs"] == len(lines)


@pytest.mark.usefixtures("small_chunks")
def test_errors_in_a_later_chunk_name_the_file_row_line_and_value(tmp_path: Path) -> None:
    lines = run_lines(8, 4)
    bad_rank = lines[21].split()
    bad_rank[3] = "six"
    lines[21] = " ".join(bad_rank)
    lines[29] = lines[29].replace(" d1 ", " d0 ")  # q8 lists d0 twice (rows 29 and 30)
    with pytest.raises(DatasetError) as raised:
        load_dataset(write_version(tmp_path / "v1", lines))
    messages = [str(issue) for issue in raised.value.issues]
    assert any("runs/bm25.trec, row 22 (line 22), column 'rank'" in m for m in messages)
    assert any("runs/bm25.trec, row 30 (line 30)" in m and "duplicate key" in m for m in messages)


@pytest.mark.usefixtures("small_chunks")
def test_unknown_query_in_a_later_chunk_is_named(tmp_path: Path) -> None:
    lines = run_lines(8, 4)
    folder = write_version(tmp_path / "v1", lines)
    (folder / "runs" / "bm25.trec").write_text(
        "".join(line + "\n" for line in [*lines, "q77 Q0 d1 1 0.5 bm25"])
    )
    with pytest.raises(DatasetError, match=r"row 33 \(line 33\), column 'query_id'.*q77"):
        load_dataset(folder)


@pytest.mark.usefixtures("small_chunks")
def test_a_run_whose_queries_are_interleaved_is_read_whole_and_grouped(tmp_path: Path) -> None:
    lines = run_lines(6, 3)
    interleaved = lines[0::2] + lines[1::2]  # every query in two separate stretches
    dataset = load_dataset(write_version(tmp_path / "v1", interleaved))
    runs = dataset.runs.to_pandas()
    chunks = list(query_chunks(dataset.runs.frames(), ["query_id"], 5))
    keys = [set(chunk["query_id"]) for chunk in chunks]
    assert all(not a & b for a, b in itertools.pairwise(keys))
    assert sorted(runs["doc_id"] + runs["query_id"]) == sorted(
        line.split()[2] + line.split()[0] for line in lines
    )


def test_a_qrels_file_of_many_arrow_blocks_reads_as_one_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [f"q{i // 3} 0 d{i} {i % 4}" for i in range(60)]
    path = tmp_path / "qrels.trec"
    path.write_text("".join(line + "\n" for line in lines))
    monkeypatch.setattr(readers, "ARROW_BLOCK_BYTES", 64)
    assert len(list(readers.whitespace_column_batches(path, readers.TREC_QRELS_COLUMNS))) > 5
    qrels = readers.read_qrels(path)
    assert qrels["doc_id"].tolist() == [f"d{i}" for i in range(60)]
    assert list(qrels.attrs["lines"]) == list(range(1, 61))


def test_query_chunks_carry_a_query_longer_than_the_search_window_whole() -> None:
    query_id = ["a"] * 5 + ["b"] * 9_000 + ["c"] * 3
    frame = pd.DataFrame({"query_id": query_id, "doc_id": [str(i) for i in range(9_008)]})
    chunks = list(query_chunks(TableBatches.of(frame, 2_500).frames(), ["query_id"], 2_000))
    assert [sorted(set(chunk["query_id"])) for chunk in chunks] == [["a"], ["b"], ["c"]]
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), frame)


@pytest.mark.usefixtures("small_chunks")
def test_unknown_ids_in_a_run_and_in_the_qrels_are_reported_together(tmp_path: Path) -> None:
    folder = write_version(tmp_path / "v1", run_lines(8, 4))
    with open(folder / "runs" / "bm25.trec", "a") as run:
        run.write("q77 Q0 d1 1 0.5 bm25\n")
    (folder / "qrels.trec").write_text("q1 0 d1 1\nq88 0 d2 2\n")
    with pytest.raises(DatasetError) as raised:
        load_dataset(folder)
    files = {issue.file for issue in raised.value.issues}
    assert files == {"runs/bm25.trec", "qrels.trec"}, raised.value.issues
