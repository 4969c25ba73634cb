"""Property-based fuzzing of dataset loading: a folder loads, or fails with a `DatasetError`.

`load_dataset` is fed generated version folders: JSONL, CSV, TSV and TREC files whose rows mix
valid values with missing columns, wrong types, duplicates, NaN and infinities, unicode, empty
strings, huge numbers, nested JSON and undecodable bytes. Whatever the input, the outcome must be
a validated `GoldenDataset` or a `DatasetError` (`InvalidVersionName` for names) whose issues
name a file of the folder — never a raw exception from pandas, numpy or the file system.

`test_known_crashes` pins the smallest inputs found by fuzzing that still raise something else.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.datasets.errors import DatasetError, InvalidVersionName
from rag_eval_pipeline.datasets.golden import GoldenDataset, load_dataset
from rag_eval_pipeline.datasets.versions import VERSION_NAME_PATTERN, validate_version_name

pytestmark = [pytest.mark.unit]

FUZZ = settings(
    max_examples=100,
    deadline=None,
    database=None,
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ----------------------------------------------------------------------------- values and rows

IDS = st.sampled_from(["q1", "q2", "q3", "d1", "d2", "d3", "s1", "l1", "007", "7"])
TEXTS = st.sampled_from(
    ["How do I reset my password?", "Invoices are sent on the 1st.", "ünïcødé ✓ 漢字 🚀", "x"]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", " ", "\t", "nan", "NaN", "inf", "-inf", "1e400", "1.5", "3", "0", "yes"]),
    st.text(max_size=12),
)
NESTED = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
# Mostly plausible values, so generated folders get past the first check often enough.
VALUES = st.one_of(IDS, TEXTS, st.sampled_from([0, 1, 2, 3, "1", "2"]), SCALARS, NESTED)

COLUMNS = {
    "queries": ["query_id", "question", "ground_truth_answer", "session_id", "turn"],
    "qrels": ["query_id", "doc_id", "relevance"],
    "corpus": ["doc_id", "text", "title", "cluster"],
    "logs": ["log_id", "question", "retrieved_doc_ids", "shown_doc_id", "latency_ms", "answer"],
    "judge_labels": [
        "label_id",
        "question",
        "context",
        "answer",
        "ground_truth_show",
        "human_score_a",
    ],
    "answers": ["query_id", "answer", "retrieved_doc_ids", "latency_ms"],
}
GOOD_VALUE = {
    "query_id": IDS,
    "doc_id": IDS,
    "session_id": IDS,
    "label_id": IDS,
    "log_id": IDS,
    "shown_doc_id": IDS,
    "cluster": IDS,
    "relevance": st.integers(0, 3),
    "turn": st.integers(1, 3),
    "latency_ms": st.floats(0, 1e4),
    "human_score_a": st.integers(1, 5),
    "ground_truth_show": st.sampled_from(["yes", "no", True, False]),
    "retrieved_doc_ids": st.lists(IDS, max_size=3),
}


@st.composite
def rows(draw: st.DrawFn, table: str) -> list[dict[str, Any]]:
    """Records of one table: each column usually valid, sometimes anything, sometimes absent."""
    columns = [c for c in COLUMNS[table] if draw(st.integers(0, 9)) > 0]
    extra = draw(st.lists(st.text(min_size=1, max_size=6), max_size=2))
    records = []
    for _ in range(draw(st.integers(0, 5))):
        record: dict[str, Any] = {}
        for column in [*columns, *extra]:
            if draw(st.integers(0, 5)) == 0:
                continue  # a ragged row
            good = GOOD_VALUE.get(column, TEXTS)
            record[column] = draw(good if draw(st.integers(0, 3)) else VALUES)
        records.append(record)
    return records


def as_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def render(records: list[dict[str, Any]], fmt: str) -> bytes:
    if fmt == "jsonl":
        return "".join(json.dumps(r, allow_nan=True) + "\n" for r in records).encode()
    header = list(dict.fromkeys(k for r in records for k in r))
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
    if header:
        writer.writerow(header)
    for record in records:
        writer.writerow([as_cell(record.get(column)) for column in header])
    return out.getvalue().encode()


@st.composite
def trec_lines(draw: st.DrawFn, fields: int) -> bytes:
    tokens = st.one_of(IDS, st.sampled_from(["Q0", "0", "1", "2", "1.5", "-1", "inf", "nan"]))
    lines = []
    for _ in range(draw(st.integers(0, 5))):
        width = fields if draw(st.integers(0, 5)) else draw(st.integers(0, fields + 2))
        lines.append(" ".join(draw(tokens) for _ in range(width)))
    return ("\n".join(lines) + "\n").encode()


CORRUPTIONS = st.sampled_from(
    [
        None,
        None,
        None,
        b"",
        b"\n",
        b"\xff\xfe garbage \xe9\n",
        b"{not json\n",
        b"[1, 2]\n",
        b"null\n",
        b'"a","b\n',
        b"\x00\x00\x00",
    ]
)


@st.composite
def dataset_folders(draw: st.DrawFn) -> dict[str, bytes]:
    """File name (relative to the version folder) → bytes."""
    files: dict[str, bytes] = {}
    for table in COLUMNS:
        required = table in ("queries", "qrels")
        if not required and draw(st.integers(0, 2)) == 0:
            continue
        if required and draw(st.integers(0, 19)) == 0:
            continue  # a required file missing
        if table == "qrels" and draw(st.integers(0, 3)) == 0:
            name = draw(st.sampled_from(["qrels.trec", "qrels.txt"]))
            files[name] = draw(trec_lines(4))
            continue
        fmt = draw(st.sampled_from(["jsonl", "jsonl", "csv", "tsv"]))
        content = render(draw(rows(table)), fmt)
        corruption = draw(CORRUPTIONS)
        if corruption is not None:
            content = corruption if draw(st.booleans()) else content + corruption
        files[f"{table}.{fmt}"] = content
    for name in draw(st.lists(st.sampled_from(["bm25", "dense"]), max_size=2, unique=True)):
        files[f"runs/{name}.trec"] = draw(trec_lines(6))
    return files


@contextmanager
def version_folder(files: dict[str, bytes]) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    folder = root / "v1"
    folder.mkdir()
    try:
        for name, content in files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        yield folder
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------------------------- outcomes


def check_outcome(files: dict[str, bytes]) -> GoldenDataset | DatasetError:
    """Load the folder and check the documented outcome; returns what happened."""
    with version_folder(files) as folder:
        try:
            dataset = load_dataset(folder, "v1")
        except DatasetError as error:
            known = {*files, *(Path(n).name for n in files), "queries.*", "qrels.*"}
            assert error.issues, str(error)
            for issue in error.issues:
                assert issue.file in known, (issue.file, str(error))
            message = str(error)
            assert any(issue.file in message for issue in error.issues)
            assert "Traceback" not in message
            return error
        except Exception as error:  # anything else is the bug this file looks for
            raise AssertionError(f"load_dataset crashed: {describe(error)}") from None
        check_loaded(dataset)  # in the folder: the runs are read from their files when used
    return dataset


def describe(error: BaseException) -> str:
    """Exception type, message and the innermost frame of our code that let it through."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/rag_eval_pipeline/" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno} in {ours[-1].name}"
    return f"{type(error).__name__}: {error} (raised through {where})"


def check_loaded(dataset: GoldenDataset) -> None:
    """What every tier relies on in a dataset that passed validation."""
    queries, qrels = dataset.queries, dataset.qrels
    ids = queries["query_id"]
    assert ids.map(lambda v: isinstance(v, str) and v.strip() != "").all()
    assert not ids.duplicated().any()
    assert queries["question"].map(lambda v: isinstance(v, str) and v.strip() != "").all()
    assert not qrels.duplicated(["query_id", "doc_id"]).any()
    grades = qrels["relevance"].tolist()
    assert all(isinstance(g, int) and 0 <= g <= 3 for g in grades), grades
    assert set(qrels["query_id"]) <= set(ids)
    if dataset.corpus is not None:
        assert set(qrels["doc_id"]) <= set(dataset.corpus["doc_id"])
    if dataset.runs is not None:
        runs = dataset.runs.to_pandas()
        assert all(isinstance(r, int) and r >= 1 for r in runs["rank"].tolist())
        assert set(runs["query_id"]) <= set(ids)


@FUZZ
@given(dataset_folders())
def test_any_folder_loads_or_raises_a_dataset_error_naming_a_file(
    files: dict[str, bytes],
) -> None:
    check_outcome(files)


@settings(max_examples=150, deadline=None, database=None)
@given(st.text(max_size=120))
def test_version_names_are_valid_or_refused(name: str) -> None:
    try:
        assert validate_version_name(name) == name
    except InvalidVersionName as error:
        assert repr(name) in str(error)
        return
    assert VERSION_NAME_PATTERN.fullmatch(name)
    assert "/" not in name and "\\" not in name and name not in (".", "..")
    assert not name.startswith(".") and "|" not in name and "," not in name


def test_valid_baseline_folder_loads() -> None:
    """The strategy's well-formed end: a tiny folder with every optional table loads."""
    files = {
        "queries.jsonl": render(
            [{"query_id": "q1", "question": "Why?", "session_id": "s1", "turn": 1}], "jsonl"
        ),
        "qrels.csv": render([{"query_id": "q1", "doc_id": "d1", "relevance": 2}], "csv"),
        "corpus.tsv": render([{"doc_id": "d1", "text": "Because."}], "tsv"),
        "logs.jsonl": render(
            [{"log_id": "l1", "question": "Why?", "retrieved_doc_ids": ["d1"], "latency_ms": 3}],
            "jsonl",
        ),
        "runs/bm25.trec": b"q1 Q0 d1 1 12.5 bm25\n",
    }
    assert isinstance(check_outcome(files), GoldenDataset)


# ------------------------------------------------------------------------ pinned crash inputs

GOOD_QUERIES = b'{"query_id": "q1", "question": "hi"}\n'
GOOD_QRELS = b"query_id,doc_id,relevance\nq1,d1,1\n"
LABEL = '{"label_id": "l", "question": "q", "context": "c", "answer": "a", '

KNOWN_CRASHES = {
    # pandas.errors.EmptyDataError in readers.read_delimited (only ParserError is caught)
    "empty csv": {"queries.jsonl": GOOD_QUERIES, "qrels.csv": b""},
    "blank-lines-only tsv": {"queries.tsv": b"\n\n", "qrels.csv": GOOD_QRELS},
    # pandas IntCastingNaNError in validation._coerce_number (`astype("int64")` of inf)
    "relevance inf in csv": {
        "queries.jsonl": GOOD_QUERIES,
        "qrels.csv": b"query_id,doc_id,relevance\nq1,d1,inf\n",
    },
    "relevance Infinity in jsonl": {
        "queries.jsonl": GOOD_QUERIES,
        "qrels.jsonl": b'{"query_id": "q1", "doc_id": "d1", "relevance": Infinity}\n',
    },
    "run rank inf": {
        "queries.jsonl": GOOD_QUERIES,
        "qrels.csv": GOOD_QRELS,
        "runs/bm25.trec": b"q1 Q0 d1 inf 1.0 bm25\n",
    },
    # OverflowError in validation._coerce_number (`astype("Int64")` of inf, nullable column)
    "turn Infinity next to a missing turn": {
        "queries.jsonl": b'{"query_id": "q1", "question": "hi", "session_id": "s", '
        b'"turn": Infinity}\n{"query_id": "q2", "question": "ho"}\n',
        "qrels.csv": GOOD_QRELS,
    },
    # TypeError (cannot safely cast non-equivalent float64 to int64), same place
    "turn -inf in csv next to a missing turn": {
        "queries.csv": b"query_id,question,session_id,turn\nq1,hi,s,-inf\nq2,ho,,\n",
        "qrels.csv": GOOD_QRELS,
    },
    # ... and for finite values beyond the int64 range
    "turn 1e20 in csv next to a missing turn": {
        "queries.csv": b"query_id,question,session_id,turn\nq1,hi,s,1e20\nq2,ho,,\n",
        "qrels.csv": GOOD_QRELS,
    },
    # ValueError (truth value of an array) in readers._ids_as_str: pd.isna(list)
    "list as query_id": {
        "queries.jsonl": b'{"query_id": [1, 2], "question": "hi"}\n',
        "qrels.csv": GOOD_QRELS,
    },
    "empty list as query_id": {
        "queries.jsonl": b'{"query_id": [], "question": "hi"}\n',
        "qrels.csv": GOOD_QRELS,
    },
    # ValueError (truth value of an array) in validation._coerce_bool: pd.isna(list)
    "list as ground_truth_show": {
        "queries.jsonl": GOOD_QUERIES,
        "qrels.csv": GOOD_QRELS,
        "judge_labels.jsonl": (LABEL + '"ground_truth_show": [1, 2]}\n').encode(),
    },
    # ValueError (inhomogeneous shape) in validation._coerce_list: np.ndim(ragged list)
    "ragged nested retrieved_doc_ids": {
        "queries.jsonl": GOOD_QUERIES,
        "qrels.csv": GOOD_QRELS,
        "logs.jsonl": b'{"log_id": "l", "question": "q", '
        b'"retrieved_doc_ids": [["d1"], {"a": 1}]}\n',
    },
    # UnicodeDecodeError in readers.read_jsonl / read_whitespace_columns (open(..., "utf-8"))
    "latin-1 jsonl": {
        "queries.jsonl": b'{"query_id": "q1", "question": "caf\xe9"}\n',
        "qrels.csv": GOOD_QRELS,
    },
    "latin-1 trec qrels": {"queries.jsonl": GOOD_QUERIES, "qrels.trec": b"q1 0 caf\xe9 1\n"},
    # ... and in readers._first_line, which sniffs a .tsv qrels file for the BEIR header
    "latin-1 tsv qrels": {"queries.jsonl": GOOD_QUERIES, "qrels.tsv": b"\xff\xfe q1 0 d1 1\n"},
    "latin-1 trec run": {
        "queries.jsonl": GOOD_QUERIES,
        "qrels.csv": GOOD_QRELS,
        "runs/bm25.trec": b"q1 Q0 caf\xe9 1 1.0 bm25\n",
    },
}


@pytest.mark.parametrize("files", KNOWN_CRASHES.values(), ids=list(KNOWN_CRASHES))
def test_known_crashes(files: dict[str, bytes]) -> None:
    outcome = check_outcome(files)
    assert isinstance(outcome, DatasetError)


def test_a_directory_named_like_a_run_file_is_reported() -> None:
    """`runs/*.trec` also matches folders; IsADirectoryError escapes today."""
    with version_folder({"queries.jsonl": GOOD_QUERIES, "qrels.csv": GOOD_QRELS}) as folder:
        (folder / "runs" / "bm25.trec").mkdir(parents=True)
        with pytest.raises(DatasetError, match=re.escape("bm25.trec")):
            load_dataset(folder, "v1")


def test_an_infinite_latency_is_not_a_valid_latency() -> None:
    """`latency_ms` has `low=0`; infinity passes the range check and poisons the percentiles."""
    logs = b'{"log_id": "l", "question": "q", "retrieved_doc_ids": ["d1"], "latency_ms": 1e999}\n'
    outcome = check_outcome(
        {"queries.jsonl": GOOD_QUERIES, "qrels.csv": GOOD_QRELS, "logs.jsonl": logs}
    )
    assert isinstance(outcome, DatasetError)
    assert [issue.column for issue in outcome.issues] == ["latency_ms"]
