"""Every kind of bad dataset input is rejected with an error naming the file, row and column."""

import json
import shutil
from pathlib import Path

import pytest

from rag_eval_pipeline.datasets.errors import DatasetError, InvalidVersionName
from rag_eval_pipeline.datasets.golden import DatasetLimits, load_dataset
from rag_eval_pipeline.datasets.manifest import DatasetManifest, read_manifest
from rag_eval_pipeline.datasets.validity import scan_versions
from rag_eval_pipeline.datasets.versions import validate_version_name, version_dir

pytestmark = [pytest.mark.unit]

CORPUS = [
    {"doc_id": "d1", "title": "Keys", "text": "Rotate API keys every 90 days.", "cluster": "sec"},
    {"doc_id": "d2", "title": "Plans", "text": "The Pro plan costs 20 USD.", "cluster": "bill"},
]
QUERIES = [
    {
        "query_id": "q1",
        "question": "How often rotate keys?",
        "ground_truth_answer": "Every 90 days.",
    },
    {"query_id": "q2", "question": "Pro plan price?", "ground_truth_answer": "20 USD."},
]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


@pytest.fixture
def version(tmp_path: Path) -> Path:
    folder = tmp_path / "v1"
    folder.mkdir()
    write_jsonl(folder / "corpus.jsonl", CORPUS)
    write_jsonl(folder / "queries.jsonl", QUERIES)
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,3\nq2,d2,2\nq2,d1,0\n")
    return folder


def error_text(folder: Path) -> str:
    with pytest.raises(DatasetError) as caught:
        load_dataset(folder)
    return str(caught.value)


def test_valid_version_loads_with_typed_columns(version: Path) -> None:
    dataset = load_dataset(version)
    assert dataset.version == "v1"
    assert dataset.qrels["relevance"].tolist() == [3, 2, 0]
    assert str(dataset.qrels["relevance"].dtype) == "int64"
    assert len(dataset.relevant_qrels) == 2
    assert dataset.has_corpus and dataset.has_ground_truth_answers


def test_missing_column_names_file_and_column(version: Path) -> None:
    write_jsonl(version / "corpus.jsonl", [{"doc_id": "d1", "title": "x"}])
    message = error_text(version)
    assert "corpus.jsonl" in message and "column 'text'" in message
    assert "missing required column" in message


def test_duplicate_ids_name_the_row(version: Path) -> None:
    write_jsonl(version / "queries.jsonl", [*QUERIES, QUERIES[0]])
    message = error_text(version)
    assert "queries.jsonl, row 3 (line 3), column 'query_id': duplicate key 'q1'" in message


def test_qrels_pointing_at_unknown_query_and_doc(version: Path) -> None:
    (version / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,3\nq9,d2,1\nq2,d7,2\n")
    message = error_text(version)
    assert (
        "qrels.csv, row 2 (line 3), column 'query_id': unknown id 'q9': not in queries" in message
    )
    assert "qrels.csv, row 3 (line 4), column 'doc_id': unknown id 'd7': not in corpus" in message


def test_every_bad_jsonl_line_reports_its_own_line_number(version: Path) -> None:
    version.joinpath("queries.jsonl").write_text(
        json.dumps(QUERIES[0]) + "\n{bad\n[1]\n\n" + json.dumps(QUERIES[1]) + "\n{bad\n"
    )
    message = error_text(version)
    assert "queries.jsonl, row 2 (line 2): invalid JSON" in message
    assert "queries.jsonl, row 3 (line 3): each line must be a JSON object, found a JSON array" in (
        message
    )
    assert "row 2 (line 2): invalid JSON: Expecting property name enclosed in double " in message
    assert "queries.jsonl, row 5 (line 6): invalid JSON" in message


def test_csv_list_cells_take_json_lists_and_a_pipe_shorthand_checked_against_the_corpus(
    version: Path,
) -> None:
    write_jsonl(
        version / "corpus.jsonl",
        [*CORPUS, {"doc_id": "kb|001", "text": "An id holding a pipe."}],
    )
    version.joinpath("logs.csv").write_text(
        'log_id,question,retrieved_doc_ids,shown_doc_id\nl1,Why?,"[""kb|001"", ""d1""]",kb|001\n'
        "l2,Why?,d1|d2,d2\n"
    )
    dataset = load_dataset(version)
    assert dataset.logs["retrieved_doc_ids"].tolist() == [["kb|001", "d1"], ["d1", "d2"]]
    version.joinpath("logs.csv").write_text(
        "log_id,question,retrieved_doc_ids,shown_doc_id\nl1,Why?,kb|001|d1,d1\n"
    )
    message = error_text(version)
    assert "logs.csv, row 1 (line 2), column 'retrieved_doc_ids': unknown id 'kb'" in message
    assert "holds '|'" in message


def test_empty_text_is_rejected(version: Path) -> None:
    write_jsonl(version / "corpus.jsonl", [CORPUS[0], {**CORPUS[1], "text": "   "}])
    assert "corpus.jsonl, row 2 (line 2), column 'text': not a valid text value" in error_text(
        version
    )


@pytest.mark.parametrize("grade", ["1.5", "x", "2e100"])
def test_non_integer_relevance_is_rejected(version: Path, grade: str) -> None:
    (version / "qrels.csv").write_text(f"query_id,doc_id,relevance\nq1,d1,{grade}\n")
    message = error_text(version)
    assert f"qrels.csv, row 1 (line 2), column 'relevance': not a valid int value: '{grade}'" in (
        message
    )


def test_any_integer_grade_is_accepted_like_trec_eval(version: Path) -> None:
    (version / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,4\nq2,d2,-1\n")
    assert load_dataset(version).qrels["relevance"].tolist() == [4, -1]


def test_invalid_json_line_names_the_line(version: Path) -> None:
    (version / "queries.jsonl").write_text(
        json.dumps(QUERIES[0]) + "\n\n{not json\n", encoding="utf-8"
    )
    assert "queries.jsonl, row 2 (line 3): invalid JSON" in error_text(version)


def test_missing_required_file(version: Path) -> None:
    (version / "qrels.csv").unlink()
    assert "qrels.*: required file is missing" in error_text(version)


def test_trec_and_beir_qrels_and_runs(version: Path) -> None:
    (version / "qrels.csv").unlink()
    (version / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\n")
    assert load_dataset(version).qrels.to_dict("records") == [
        {"query_id": "q1", "doc_id": "d1", "relevance": 2}
    ]
    (version / "qrels.tsv").unlink()
    (version / "qrels.trec").write_text("q1 0 d1 1\nq2 0 d2 3\n")
    (version / "runs").mkdir()
    (version / "runs" / "bm25.trec").write_text("q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\n")
    dataset = load_dataset(version)
    assert dataset.qrels["relevance"].tolist() == [1, 3]
    assert dataset.runs.to_pandas()["system"].unique().tolist() == ["bm25"]
    assert dataset.runs.to_pandas()["score"].tolist() == [2.5, 1.5]


def test_malformed_trec_run_line(version: Path) -> None:
    (version / "runs").mkdir()
    (version / "runs" / "bm25.trec").write_text("q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2\n")
    assert (
        "runs/bm25.trec, row 2 (line 2): expected at least 6 whitespace-separated fields "
        "(query_id q0 doc_id rank score tag), found 4: 'q1 Q0 d2 2'"
    ) in error_text(version)


def test_run_fields_after_the_sixth_are_ignored_as_trec_eval_does(version: Path) -> None:
    (version / "runs").mkdir()
    # The layout of trec_eval's test/results.trunc: text after the run tag on some lines.
    (version / "runs" / "trunc.trec").write_text(
        "q1 Q0 d1 99 2.138276 STANDARD more junk at\nq1 Q0 d2 98 1.5 STANDARD\n"
        "q2  Q0 d2 1 0.5 STANDARD x\n"
    )
    runs = load_dataset(version).runs.to_pandas()
    assert runs[["query_id", "doc_id", "rank", "score"]].values.tolist() == [
        ["q1", "d1", 99, 2.138276],
        ["q1", "d2", 98, 1.5],
        ["q2", "d2", 1, 0.5],
    ]
    assert runs["system"].unique().tolist() == ["trunc"]


def test_a_qrels_line_with_a_fifth_field_is_refused_as_trec_eval_does(version: Path) -> None:
    (version / "qrels.csv").unlink()
    (version / "qrels.trec").write_text("q1 0 d1 1\nq2 0 d2 1 extra\n")
    assert (
        "qrels.trec, row 2 (line 2): expected 4 whitespace-separated fields "
        "(query_id iteration doc_id relevance), found 5: 'q2 0 d2 1 extra'"
    ) in error_text(version)


def test_run_referencing_unknown_doc(version: Path) -> None:
    (version / "runs").mkdir()
    (version / "runs" / "bm25.trec").write_text("q1 Q0 dX 1 2.5 bm25\n")
    assert "runs/bm25.trec, row 1 (line 1), column 'doc_id': unknown id" in error_text(version)


def test_many_bad_rows_are_counted_not_all_listed(version: Path) -> None:
    lines = "".join(f"q1,d{n},x\n" for n in range(12))
    (version / "qrels.csv").write_text("query_id,doc_id,relevance\n" + lines)
    message = error_text(version)
    assert "(and 7 more rows)" in message


@pytest.mark.parametrize("name", ["../x", "a b", "", "a/b", "x|y", "a,b", ".hidden", "..", "ü"])
def test_bad_version_names_are_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidVersionName, match="Invalid dataset version name"):
        validate_version_name(name)
    with pytest.raises(InvalidVersionName):
        version_dir(tmp_path, name)


def test_scan_reports_invalid_folders(version: Path) -> None:
    root = version.parent
    (root / "bad name").mkdir()
    (root / "empty").mkdir()
    shutil.copytree(version, root / "v2")
    scan = scan_versions(root)
    assert scan.valid == ["v1", "v2"]
    assert "Invalid dataset version name" in scan.invalid["bad name"]
    assert scan.invalid["empty"] == (
        "queries.*: required file is missing (a version holds queries.* and qrels.* "
        "(or BEIR's qrels/<split>.tsv), or one ragas.* or deepeval.* table) "
        "(and 1 more problem(s))"
    )


def test_shipped_scifact_version_is_valid() -> None:
    root = Path(__file__).resolve().parents[1] / "data" / "datasets"
    dataset = load_dataset(root / "scifact-test")
    assert dataset.statistics()["n_queries"] == 300
    assert not dataset.has_corpus


def test_loaded_tables_carry_no_reader_attrs_and_round_trip_parquet(
    version: Path, tmp_path: Path
) -> None:
    (version / "qrels.csv").unlink()
    (version / "qrels.trec").write_text("q1 0 d1 1\nq2 0 d2 3\n")
    for name, frame in load_dataset(version).tables().items():
        assert frame.attrs == {}, name
        frame.to_parquet(tmp_path / f"{name}.parquet")


def test_a_table_linked_out_of_the_folder_is_refused_without_echoing_it(
    version: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secrets.env"
    secret.write_text("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI\nother=1\n")
    (version / "corpus.jsonl").unlink()
    (version / "corpus.csv").symlink_to(secret)
    message = error_text(version)
    assert "corpus.csv: is a link to a file outside the dataset folder" in message
    assert "wJalrXUtnFEMI" not in message


def test_a_file_that_is_not_a_table_is_not_echoed(version: Path) -> None:
    (version / "corpus.jsonl").unlink()
    (version / "corpus.csv").write_text("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI\nother\n")
    message = error_text(version)
    assert "corpus.csv, column 'doc_id': missing required column" in message
    assert "do not look like column names" in message
    assert "wJalrXUtnFEMI" not in message


def test_stray_files_are_not_read(version: Path) -> None:
    (version / "corpus.jsonl.bak").write_bytes(b"\xff\xfe not a table")
    (version / "queries.md").write_text("# notes\n")
    (version / "README.txt").write_text("hello\n")
    assert load_dataset(version).statistics()["n_queries"] == 2


def test_files_and_texts_over_the_limits_are_errors(version: Path) -> None:
    write_jsonl(version / "corpus.jsonl", [*CORPUS, {"doc_id": "d3", "text": "x" * 101}])
    size = (version / "corpus.jsonl").stat().st_size
    with pytest.raises(DatasetError) as caught:
        load_dataset(version, limits=DatasetLimits(max_file_bytes=size - 1))
    assert f"corpus.jsonl: {size:,} bytes, over the {size - 1:,}-byte limit" in str(caught.value)
    with pytest.raises(DatasetError) as caught:
        load_dataset(version, limits=DatasetLimits(max_text_chars=100))
    assert "corpus.jsonl, row 3 (line 3), column 'text': text longer than 100 characters: '" in str(
        caught.value
    )


@pytest.mark.parametrize(
    "run_text",
    [
        'q1 Q0 d1 1 2.5 bm25\nq2 Q0 d"2 1 1.5 bm25\n',  # Arrow fast path; a quote is just a char
        'q1\tQ0\td1\t1\t2.5\tbm25\nq2\tQ0\td"2\t1\t1.5\tbm25\n',  # tabs
        'q1  Q0 d1 1 2.5 bm25\n\nq2 Q0   d"2 1 1.5 bm25',  # runs of spaces, blank line, no EOL
    ],
)
def test_trec_runs_read_the_same_whatever_the_whitespace(version: Path, run_text: str) -> None:
    write_jsonl(version / "corpus.jsonl", [*CORPUS, {"doc_id": 'd"2', "text": "Quoted id."}])
    (version / "runs").mkdir()
    (version / "runs" / "bm25.trec").write_text(run_text)
    runs = load_dataset(version).runs.to_pandas()
    assert runs[["query_id", "doc_id"]].values.tolist() == [["q1", "d1"], ["q2", 'd"2']]
    assert runs["score"].tolist() == [2.5, 1.5]
    assert runs["rank"].tolist() == [1, 1]


def test_dataset_yaml_is_a_model_refusing_unknown_keys_with_their_line(tmp_path: Path) -> None:
    (tmp_path / "dataset.yaml").write_text("split: dev\nrelevence: 2\nrelevance_level: 0\n")
    manifest, issues = read_manifest(tmp_path)
    assert manifest == DatasetManifest()
    assert sorted(str(issue) for issue in issues) == [
        "dataset.yaml, line 2: relevence = 2: unknown key; did you mean 'relevance_level'?",
        "dataset.yaml, line 3, column 'relevance_level': must be an integer >= 1 (trec_eval -l), "
        "got 0",
    ]
    schema = DatasetManifest.model_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["staged_change_days_ago"]["anyOf"][0]["maximum"] == 365
