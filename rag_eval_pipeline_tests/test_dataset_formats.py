"""The formats users already have load unchanged: trec_eval's graded qrels with a relevance level
(`dataset.yaml`), BEIR folders, ragas and deepeval evaluation tables.

Every fixture is written here in the format's own layout, and the metrics computed from the
loaded version are checked against pytrec_eval or hand-computed values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval
from dagster import DagsterInstance, SensorResult, build_sensor_context, materialize

from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.formats import derived_query_ids, text_id
from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.definitions import ALL_ASSETS, ALL_CHECKS
from rag_eval_pipeline.defs.dataset.sensors import dataset_version_sensor
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.generation import ideal_contexts
from rag_eval_pipeline.evaluation.retrieval import evaluate_runs, logged_runs, real_user_run
from rag_eval_pipeline.metrics.retrieval import evaluate_run
from rag_eval_pipeline_tests.conftest import evaluation_resources, rag_eval, report_config

pytestmark = [pytest.mark.integration]

# The layout of trec_eval's test/qrels.rel_level: `qid iter docno rel`, grades -1 to 4.
TREC_QRELS = """\
1 0 d1 4
1 0 d2 1
1 0 d3 -1
1 0 d4 0
1 0 d5 2
1 0 d6 3
2 0 d1 1
2 0 d7 2
3 0 d2 1
"""
TREC_RUN = """\
1 Q0 d9 1 9.0 bm25
1 Q0 d4 2 8.0 bm25
1 Q0 d3 3 7.0 bm25
1 Q0 d2 4 6.0 bm25
1 Q0 d1 5 5.0 bm25
1 Q0 d5 6 4.0 bm25
2 Q0 d1 1 2.0 bm25
2 Q0 d7 2 1.0 bm25
3 Q0 d2 1 1.0 bm25
"""
MEASURES = {"recip_rank": "mrr", "P.5": "precision@5", "map": "map", "ndcg_cut.10": "ndcg@10"}


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def trec_version(root: Path, manifest: str | None) -> Path:
    folder = root / "trec-graded"
    (folder / "runs").mkdir(parents=True)
    write_jsonl(folder / "queries.jsonl", [{"query_id": q, "question": f"q{q}?"} for q in "123"])
    (folder / "qrels.txt").write_text(TREC_QRELS)
    (folder / "runs" / "bm25.trec").write_text(TREC_RUN)
    if manifest is not None:
        (folder / "dataset.yaml").write_text(manifest)
    return folder


def pytrec_eval_values(level: int) -> pd.DataFrame:
    qrels: dict[str, dict[str, int]] = {}
    for line in TREC_QRELS.splitlines():
        query, _, doc, grade = line.split()
        qrels.setdefault(query, {})[doc] = int(grade)
    run: dict[str, dict[str, float]] = {}
    for line in TREC_RUN.splitlines():
        query, _, doc, _, score, _ = line.split()
        run.setdefault(query, {})[doc] = float(score)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES), relevance_level=level)
    results = evaluator.evaluate(run)
    rows = [
        {"query_id": q, **{ours: results[q][t.replace(".", "_")] for t, ours in MEASURES.items()}}
        for q in sorted(results)
        if any(g >= level for g in qrels[q].values())
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("manifest", "level"), [(None, 1), ("relevance_level: 2\n", 2)])
def test_trec_graded_qrels_with_a_relevance_level_match_pytrec_eval(
    tmp_path: Path, manifest: str | None, level: int
) -> None:
    dataset = load_dataset(trec_version(tmp_path, manifest))
    assert dataset.relevance_level == level
    assert sorted(dataset.qrels["relevance"].unique().tolist()) == [-1, 0, 1, 2, 3, 4]
    ours = evaluate_runs(
        logged_runs(dataset),
        dataset.qrels,
        real_user_run(dataset)[1],
        list(MEASURES.values()),
        relevance_level=dataset.relevance_level,
    )
    expected = pytrec_eval_values(level)
    assert ours["query_id"].tolist() == expected["query_id"].tolist()
    for metric in MEASURES.values():
        assert ours[metric].tolist() == pytest.approx(expected[metric].tolist(), abs=1e-12)
    # Level 2 drops query 3 (only a grade 1) and makes d2 (grade 1) non-relevant.
    assert len(ours) == (3 if level == 1 else 2)
    assert set(dataset.relevant_qrels["relevance"]) == set(range(level, 5))


def test_ideal_context_and_real_users_follow_the_relevance_level(tmp_path: Path) -> None:
    folder = trec_version(tmp_path, "relevance_level: 3\nlanguage: en\n")
    write_jsonl(
        folder / "corpus.jsonl", [{"doc_id": f"d{n}", "text": f"text {n}"} for n in range(1, 10)]
    )
    write_jsonl(
        folder / "logs.jsonl",
        [
            {
                "log_id": "l1",
                "question": "x?",
                "retrieved_doc_ids": ["d2", "d1"],
                "shown_doc_id": "d1",
            }
        ],
    )
    dataset = load_dataset(folder)
    ideal = ideal_contexts(dataset)
    assert ideal["query_id"].tolist() == ["1"]
    assert ideal["context_doc_ids"].tolist() == [["d1", "d6"]]
    run, qrels = real_user_run(dataset)
    scored = evaluate_run(run, qrels, ["mrr"], relevance_level=dataset.relevance_level)
    assert scored["mrr"].tolist() == [0.5]


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        ("relevance_level: 0\n", "line 1, column 'relevance_level': must be an integer >= 1"),
        (
            "split: test\nrelevance: 2\n",
            "line 2: relevance = 2: unknown key; did you mean 'relevance_level'?",
        ),
        ("system: magic\n", "must be one of reference, callable, logged, http, got 'magic'"),
        ("split: ../etc\n", "got '../etc'"),
        ("- 1\n", "must be a mapping"),
        ("relevance_level: [\n", "invalid YAML"),
    ],
)
def test_bad_manifests_name_the_setting_and_value(
    tmp_path: Path, manifest: str, expected: str
) -> None:
    with pytest.raises(DatasetError) as caught:
        load_dataset(trec_version(tmp_path, manifest))
    assert f"dataset.yaml, {expected}" in str(caught.value) or expected in str(caught.value)


def beir_folder(root: Path, split: str = "test") -> Path:
    folder = root / "scifact-beir"
    write_jsonl(
        folder / "corpus.jsonl",
        [
            {"_id": "4983", "title": "Microstructural", "text": "Alterations of white matter."},
            {
                "_id": "5836",
                "title": "Induction",
                "text": "Myelodysplastic syndromes.",
                "metadata": {},
            },
            {
                "_id": "7912",
                "title": "BC1",
                "text": "RNA inhibits translation.",
                "metadata": {"a": 1},
            },
        ],
    )
    write_jsonl(
        folder / "queries.jsonl",
        [
            {
                "_id": "1",
                "text": "0-dimensional biomaterials show inductive properties.",
                "metadata": {},
            },
            {"_id": "3", "text": "1,000 genomes project enables mapping.", "metadata": {}},
            {"_id": "5", "text": "A train-split claim.", "metadata": {}},
        ],
    )
    (folder / "qrels").mkdir()
    (folder / "qrels" / f"{split}.tsv").write_text(
        "query-id\tcorpus-id\tscore\n1\t4983\t1\n3\t5836\t1\n3\t7912\t1\n"
    )
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n5\t7912\t1\n")
    return folder


def test_beir_folder_loads_unchanged_with_only_the_split_questions(tmp_path: Path) -> None:
    dataset = load_dataset(beir_folder(tmp_path))
    assert dataset.queries["query_id"].tolist() == ["1", "3"]
    assert dataset.queries["question"].iloc[0].startswith("0-dimensional")
    assert dataset.corpus["doc_id"].tolist() == ["4983", "5836", "7912"]
    assert json.loads(dataset.corpus["metadata"].iloc[2]) == {"a": 1}
    assert dataset.qrels[["query_id", "doc_id"]].values.tolist() == [
        ["1", "4983"],
        ["3", "5836"],
        ["3", "7912"],
    ]
    run = pd.DataFrame(
        {"query_id": ["1", "3", "3"], "doc_id": ["5836", "7912", "4983"], "score": [2.0, 2.0, 1.0]}
    )
    scored = evaluate_run(run, dataset.qrels, ["recall@1", "mrr"])
    assert scored["recall@1"].tolist() == [0.0, 0.5]
    assert scored["mrr"].tolist() == [0.0, 1.0]


def test_beir_split_comes_from_the_manifest(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, split="dev")
    with pytest.raises(DatasetError, match=r"qrels\.\*: required file is missing"):
        load_dataset(folder)
    (folder / "dataset.yaml").write_text("split: dev\n")
    assert load_dataset(folder).queries["query_id"].tolist() == ["1", "3"]
    (folder / "dataset.yaml").write_text("split: train\n")
    assert load_dataset(folder).queries["query_id"].tolist() == ["5"]


RAGAS_ROWS = [
    {
        "user_input": "When was the first super bowl?",
        "retrieved_contexts": ["The First AFL-NFL World Championship Game was in 1967.", "Other"],
        "response": "The first superbowl was held on Jan 15, 1967",
        "reference": "The first superbowl was held on January 15, 1967",
        "reference_contexts": ["The First AFL-NFL World Championship Game was in 1967."],
    },
    {
        "user_input": "Who won the most super bowls?",
        "retrieved_contexts": ["Other", "The Patriots and the Steelers won six each."],
        "response": "The Patriots and the Steelers, six each.",
        "reference": "The New England Patriots and the Pittsburgh Steelers.",
        "reference_contexts": ["The Patriots and the Steelers won six each."],
    },
]


def deepeval_rows() -> list[dict]:
    return [
        {
            "input": row["user_input"],
            "actual_output": row["response"],
            "expected_output": row["reference"],
            "retrieval_context": row["retrieved_contexts"],
            "context": row["reference_contexts"],
        }
        for row in RAGAS_ROWS
    ]


def write_table(folder: Path, name: str, rows: list[dict], extension: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.{extension}"
    if extension == "jsonl":
        write_jsonl(path, rows)
    elif extension == "csv":  # as ragas' `to_pandas().to_csv()` writes lists: Python literals
        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        pd.DataFrame(rows).to_parquet(path)


@pytest.mark.parametrize("extension", ["jsonl", "csv", "parquet"])
@pytest.mark.parametrize("table_format", ["ragas", "deepeval"])
def test_ragas_and_deepeval_tables_load_as_logged_answer_versions(
    tmp_path: Path, table_format: str, extension: str
) -> None:
    rows = RAGAS_ROWS if table_format == "ragas" else deepeval_rows()
    write_table(tmp_path / "migrated", table_format, rows, extension)
    dataset = load_dataset(tmp_path / "migrated")
    assert dataset.manifest.system == "logged"
    questions = [row["user_input"] for row in RAGAS_ROWS]
    assert dataset.queries["query_id"].tolist() == derived_query_ids(pd.Series(questions))
    assert dataset.queries["ground_truth_answer"].tolist() == [r["reference"] for r in RAGAS_ROWS]
    assert dataset.answers["answer"].tolist() == [r["response"] for r in RAGAS_ROWS]
    assert len(dataset.corpus) == 3  # "Other" is one document
    retrieved = dataset.answers.explode("retrieved_doc_ids").rename(
        columns={"retrieved_doc_ids": "doc_id"}
    )
    run = retrieved.assign(score=-retrieved.groupby("query_id").cumcount().astype(float))
    scored = evaluate_run(run, dataset.qrels, ["hit_rate@1", "mrr"])
    assert scored.set_index("query_id").loc[dataset.queries["query_id"], "mrr"].tolist() == [
        1.0,
        0.5,
    ]
    assert ideal_contexts(dataset)["contexts"].tolist() == [
        r["reference_contexts"] for r in RAGAS_ROWS
    ]


def test_derived_question_ids_are_stable_and_repeats_numbered() -> None:
    ids = derived_query_ids(pd.Series(["b", "a", "b"]))
    assert ids[0] != ids[1] and ids[2] == f"{ids[0]}-2"
    assert derived_query_ids(pd.Series(["a"])) == [ids[1]]
    assert text_id("x") == text_id("x") != text_id("y")


def test_a_bad_ragas_row_names_file_row_and_column(tmp_path: Path) -> None:
    rows = [*RAGAS_ROWS, {**RAGAS_ROWS[0], "retrieved_contexts": "['a', 3]"}]
    write_table(tmp_path / "bad", "ragas", rows, "csv")
    with pytest.raises(DatasetError) as caught:
        load_dataset(tmp_path / "bad")
    assert "ragas.csv, row 3 (line 4), column 'retrieved_contexts'" in str(caught.value)


@pytest.mark.parametrize("table_format", ["ragas", "deepeval-without-reference-contexts"])
def test_a_migrated_table_runs_the_whole_pipeline_with_its_logged_answers(
    tmp_path: Path, embedder: Embedder, dagster_instance: DagsterInstance, table_format: str
) -> None:
    root = tmp_path / "datasets"
    if table_format == "ragas":
        write_table(root / "migrated", "ragas", RAGAS_ROWS, "jsonl")
    else:
        rows = [{k: v for k, v in row.items() if k != "context"} for row in deepeval_rows()]
        write_table(root / "migrated", "deepeval", rows, "jsonl")
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["migrated"])
    result = materialize(
        [*ALL_ASSETS, *ALL_CHECKS],
        partition_key=evaluation_partition_key("migrated", "2026-11-21"),
        resources=evaluation_resources(
            tmp_path, embedder, datasets=DatasetsResource(root=str(root))
        ),
        instance=dagster_instance,
        run_config=report_config(tmp_path),
    )
    assert result.success
    golden = result.asset_materializations_for_node("golden_dataset")[0].metadata
    assert golden["system"].value == "logged" and golden["relevance_level"].value == 1
    outputs = result.output_for_node("e2e_generations")
    assert outputs["system"].unique().tolist() == ["logged"]
    assert outputs["answer"].tolist() == [r["response"] for r in RAGAS_ROWS]
    assert outputs["contexts"].tolist() == [r["retrieved_contexts"] for r in RAGAS_ROWS]
    scorecard = result.output_for_node("evaluation_scorecard")
    assert ("tier3_e2e", "logged") in set(zip(scorecard["tier"], scorecard["system"], strict=True))
    ideal = result.output_for_node("ideal_context_generations")
    assert len(ideal) == (2 if table_format == "ragas" else 0)


def broken_version(root: Path) -> None:
    broken = root / "broken"
    write_jsonl(broken / "queries.jsonl", [{"query_id": "q1", "question": "Why?"}])
    (broken / "qrels.csv").write_text("query_id,doc_id,relevance\nnope-42,d1,1\n")


def test_rag_eval_run_of_an_invalid_version_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    broken_version(tmp_path / "datasets")
    stderr = rag_eval(
        tmp_path, tmp_path / "home", "run", "--dataset-version", "broken", exit_code=2
    )
    assert stderr.strip().splitlines() == [
        "invalid dataset version 'broken': qrels.csv, row 1 (line 2), column 'query_id': "
        "unknown id 'nope-42': not in queries"
    ]


def test_rag_eval_run_names_a_registered_version_that_broke_in_one_line(tmp_path: Path) -> None:
    broken_version(tmp_path / "datasets")
    home = tmp_path / "home"
    home.mkdir()
    with DagsterInstance.local_temp(tempdir=str(home)) as instance:
        instance.add_dynamic_partitions(DATASET_VERSION, ["broken"])
    stderr = rag_eval(tmp_path, home, "run", "--dataset-version", "broken", exit_code=2)
    assert stderr.strip().splitlines() == [
        "invalid dataset version 'broken': qrels.csv, row 1 (line 2), column 'query_id': "
        "unknown id 'nope-42': not in queries"
    ]


def test_sensor_never_registers_a_folder_whose_tables_fail_validation(
    tmp_path: Path, dagster_instance: DagsterInstance
) -> None:
    root = tmp_path / "datasets"
    trec_version(root, "relevance_level: 2\n")
    broken_version(root)
    with build_sensor_context(
        instance=dagster_instance, resources={"datasets": DatasetsResource(root=str(root))}
    ) as context:
        result = dataset_version_sensor(context)
        assert isinstance(result, SensorResult)
        assert result.dynamic_partitions_requests[0].partition_keys == ["trec-graded"]
        dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["trec-graded"])
        again = dataset_version_sensor(context)
        assert "'broken'" in again.skip_message
        assert "unknown id 'nope-42': not in queries" in again.skip_message
        assert json.loads(context.cursor)["broken"][1].endswith("not in queries")
        (root / "broken" / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
        fixed = dataset_version_sensor(context)
        assert isinstance(fixed, SensorResult)
        assert fixed.dynamic_partitions_requests[0].partition_keys == ["broken"]


def test_an_evaluation_table_is_a_whole_version(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    write_table(folder, "ragas", RAGAS_ROWS, "jsonl")
    write_jsonl(folder / "queries.jsonl", [{"query_id": "q1", "question": "Why?"}])
    with pytest.raises(DatasetError, match=r"ragas\.jsonl: a ragas table is a whole version"):
        load_dataset(folder)
    (folder / "queries.jsonl").unlink()
    write_table(folder, "deepeval", deepeval_rows(), "csv")
    with pytest.raises(DatasetError, match=r"ragas\.jsonl and deepeval\.csv: one evaluation table"):
        load_dataset(folder)


def test_rag_eval_validate_prints_the_versions_settings(tmp_path: Path) -> None:
    write_table(tmp_path / "datasets" / "ragas-v1", "ragas", RAGAS_ROWS, "csv")
    (tmp_path / "datasets" / "ragas-v1" / "dataset.yaml").write_text("relevance_level: 2\n")
    stdout = rag_eval(tmp_path, tmp_path / "home", "validate", "datasets/ragas-v1")
    assert "Dataset version 'ragas-v1' is valid:" in stdout
    assert "  n_answers: 2" in stdout
    assert "  relevance_level: 2, system: logged" in stdout


def test_rag_eval_run_where_every_folder_is_invalid_exits_2(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    broken_version(root)
    (root / "bad name").mkdir()
    stderr = rag_eval(tmp_path, tmp_path / "home", "run", exit_code=2)
    lines = stderr.strip().splitlines()
    assert lines[0].startswith("invalid dataset version 'bad name': Invalid dataset version name")
    assert lines[1] == (
        "invalid dataset version 'broken': qrels.csv, row 1 (line 2), column 'query_id': "
        "unknown id 'nope-42': not in queries"
    )
    assert lines[2:] == [
        f"no valid dataset version to evaluate: all 2 folder(s) under {root} are invalid "
        "(reasons above)"
    ]


def test_rag_eval_run_without_any_dataset_folder_exits_2(tmp_path: Path) -> None:
    (tmp_path / "datasets").mkdir()
    stderr = rag_eval(tmp_path, tmp_path / "home", "run", exit_code=2)
    assert stderr.strip().splitlines()[-1] == (
        f"no valid dataset version to evaluate: {tmp_path / 'datasets'} holds no dataset folder"
    )
