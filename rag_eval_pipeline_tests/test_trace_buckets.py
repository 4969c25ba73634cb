"""A `traces/` folder read in bounded memory (`datasets/traces/buckets.py`, `by_day.py`).

For several folders (OTLP JSON over many files, zstd protobuf, a trace split across two rotated
files, spans exported twice, users' feedback annotations), with the real bucket size and with
one so small that every bucket is split again: the day-by-day chunks are the whole table's
rows in its order, and the copy `golden_dataset` stages from them equals, day file by day
file, the copy staged from the whole table as before. A span exported twice keeps its first
file's copy; a trace's problems are the first ones met in file order, capped as one file's.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.datasets.log_chunks import with_log_ids
from rag_eval_pipeline.datasets.staged_logs import LogStage, StagedLogs
from rag_eval_pipeline.datasets.traces import buckets, trace_interaction_chunks, trace_interactions
from rag_eval_pipeline.datasets.traces.conventions import FileProblems
from rag_eval_pipeline.datasets.traces.span_store import SpanStore
from rag_eval_pipeline.storage.batches import TableBatches
from rag_eval_pipeline.storage.objects import storage_path
from rag_eval_pipeline.storage.stage_entries import prune_stage
from rag_eval_pipeline_tests.test_collector_traces import zstd_stream_proto
from rag_eval_pipeline_tests.trace_fixtures import (
    DOC_TEXTS,
    RawTrace,
    export_request,
    synthetic_traces,
    write_otlp,
)

pytestmark = [pytest.mark.integration]

LAYOUTS = ["json", "zstd proto", "split and repeated", "feedback"]
LABELS = ["thumbs-up", "down", "4", "1"]


@pytest.fixture(scope="module")
def traces() -> list[RawTrace]:
    return synthetic_traces(240)


def one_line(spans: list) -> str:
    return json.dumps(export_request(spans)) + "\n"


def write_traces(folder: Path, layout: str, traces: list[RawTrace]) -> None:
    """`traces` under `folder` in `layout`."""
    if layout == "zstd proto":
        write_otlp(folder, traces, encode=zstd_stream_proto, name="x-{day}-{part}.pb.zst")
        return
    write_otlp(folder, traces[20:], files_per_day=3)
    if layout == "split and repeated":  # roots in a rotated file, the rest in the live one
        first = [s for t in traces[:20] for s in t.spans if s.parent_id is None]
        rest = [s for t in traces[:20] for s in t.spans if s.parent_id is not None]
        (folder / "traces-2026-11-05T10-00-00.000.json").write_text(one_line(first))
        (folder / "traces.json").write_text(one_line(rest) + one_line(first[:5]))
    else:
        write_otlp(folder, traces[:20], files_per_day=1, name="first-{day}-{part}.json")
    if layout == "feedback":
        silent = [t for t in traces if t.feedback is None][:30]
        records = [
            {"span_id": t.spans[k % len(t.spans)].span_id, "name": "user feedback"}
            | {
                "annotator_kind": "HUMAN",
                "result": {"label": LABELS[k % len(LABELS)], "score": 1.0},
            }
            for k, t in enumerate(silent)
        ]
        (folder / "annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def write_version(folder: Path, layout: str, traces: list[RawTrace]) -> Path:
    folder.mkdir(parents=True)
    (folder / "queries.jsonl").write_text(json.dumps({"query_id": "q1", "question": "Q?"}) + "\n")
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": d, "text": t}) + "\n" for d, t in DOC_TEXTS.items())
    )
    write_traces(folder / "traces", layout, traces)
    return folder


def day_files(staged: StagedLogs) -> dict[str, pd.DataFrame]:
    return {day: pd.read_parquet(staged.folder / f"{day}.parquet") for day in staged.days}


@pytest.mark.parametrize("small_buckets", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_staged_from_chunks_equals_staged_from_the_whole_table(
    layout: str,
    small_buckets: bool,
    traces: list[RawTrace],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = write_version(tmp_path / "v1", layout, traces)
    whole = trace_interactions(folder)
    assert len(whole) == len(traces)
    before = LogStage(
        storage_path(tmp_path / "before")
    ).stage(  # as golden_dataset staged it before
        "key", TableBatches.of(with_log_ids(load_dataset(folder).logs, 0)).frames()
    )
    if small_buckets:  # every bucket over the limit: split again by the hash's next bits
        monkeypatch.setattr(buckets, "MAX_BUCKET_BYTES", 2_000)
    chunks = list(trace_interaction_chunks(folder))
    days = [chunk["timestamp"].dt.date.unique().tolist() for chunk in chunks]
    assert all(len(day) == 1 for day in days) and days == sorted(days)
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), whole, check_exact=True)
    staged = load_dataset(folder, stage=LogStage(storage_path(tmp_path / "stage"))).staged_logs
    assert staged is not None and staged.days == before.days and len(staged.days) >= 4
    now, then = day_files(staged), day_files(before)
    for day in staged.days:
        pd.testing.assert_frame_equal(now[day], then[day], check_exact=True)
    pd.testing.assert_frame_equal(
        pd.concat(staged.whole().frames(), ignore_index=True),
        pd.concat(before.whole().frames(), ignore_index=True),
        check_exact=True,
    )


def test_a_span_exported_twice_keeps_its_first_files_copy(
    traces: list[RawTrace], tmp_path: Path
) -> None:
    """The same spans in two files, the copy in the later file (sorted names) asking another
    question: the earlier file's copy is kept, wherever its bucket and whatever the split."""
    spans = [s for t in traces[:10] for s in t.spans]
    changed = [
        dataclasses.replace(s, attributes={**s.attributes, "input.value": "changed"}) for s in spans
    ]
    for name, (first, second) in {
        "original": (spans, changed),
        "changed": (changed, spans),
    }.items():
        folder = tmp_path / name / "traces"
        folder.mkdir(parents=True)
        (folder / "a.json").write_text(one_line(first))
        (folder / "b.json").write_text(one_line(second))
        questions = set(trace_interactions(tmp_path / name)["question"])
        assert (questions == {"changed"}) == (name == "changed"), questions
        assert len(questions) == (1 if name == "changed" else 10)


def test_problems_are_the_first_traces_met_capped_as_one_files(
    traces: list[RawTrace], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """150 traces without a question, met in file order across buckets: the error names the
    first `MAX_PROBLEMS` of them in that order, the staged path's as the whole path's, and
    nothing is staged."""
    folder = write_version(tmp_path / "v1", "json", traces[150:])
    unasked = [
        dataclasses.replace(
            s, attributes={k: v for k, v in s.attributes.items() if k != "input.value"}
        )
        for t in traces[:150]
        for s in t.spans
    ]
    batches = [unasked[i : i + 7] for i in range(0, len(unasked), 7)]
    (folder / "traces" / "b-unasked.json").write_text("".join(map(one_line, batches)))
    met = list(dict.fromkeys(s.trace_id for s in unasked))
    expected = [
        f"no span of trace '{trace_id}' has a question"
        for trace_id in met[: FileProblems.MAX_PROBLEMS]
    ]
    monkeypatch.setattr(buckets, "MAX_BUCKET_BYTES", 2_000)
    with pytest.raises(DatasetError) as whole:
        trace_interactions(folder)
    assert [issue.message for issue in whole.value.issues] == expected
    stage = LogStage(storage_path(tmp_path / "stage"))
    with pytest.raises(DatasetError) as staged:
        load_dataset(folder, stage=stage)
    assert [(i.file, i.message) for i in staged.value.issues] == [
        (i.file, i.message) for i in whole.value.issues
    ]
    published = {p.parent.name for p in (tmp_path / "stage").glob("*/_staged.json")}
    assert published == set(stored_spans(tmp_path / "stage"))  # files' spans, no interactions


def test_invalid_rows_are_named_by_their_row_in_the_whole_table(
    traces: list[RawTrace], tmp_path: Path
) -> None:
    """Rows validated day by day are numbered as in the whole table (`timestamp`, `log_id`
    order): the staged path's problems are the whole path's."""
    folder = write_version(tmp_path / "v1", "json", traces)
    chosen = [t for t in traces if t.feedback is None][::7][:4]
    records = [
        {"span_id": t.spans[0].span_id, "name": "feedback", "annotator_kind": "HUMAN"}
        | {"result": {"label": f"so-so {k}"}}
        for k, t in enumerate(chosen)
    ]
    (folder / "traces" / "notes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(DatasetError) as whole:
        load_dataset(folder)
    with pytest.raises(DatasetError) as staged:
        load_dataset(folder, stage=LogStage(storage_path(tmp_path / "stage")))
    assert len({t.spans[0].start_ns // 86_400_000_000_000 for t in chosen}) > 1
    assert len(whole.value.issues) == len(chosen)
    assert sorted(map(str, staged.value.issues)) == sorted(map(str, whole.value.issues))


def stored_spans(root: Path) -> dict[str, str]:
    """The stored files' spans under a stage root: name → its manifest's text."""
    return {p.name: (p / "_staged.json").read_text() for p in root.glob("spans-*")}


def test_a_version_that_gains_a_file_parses_only_that_file(
    traces: list[RawTrace], tmp_path: Path
) -> None:
    """The Collector's daily rotation: the version gains a file (which also holds the last
    span of three traces begun in earlier files). Staging it again stores spans for that one
    file only, the earlier files' stored spans untouched, and gives a fresh staging's copy."""
    first = [dataclasses.replace(t, spans=t.spans[:-1]) for t in traces[:3]] + traces[3:200]
    folder = write_version(tmp_path / "v1", "json", first)
    files = sorted(p.name for p in (folder / "traces").iterdir())
    stage = LogStage(storage_path(tmp_path / "stage"))
    before = load_dataset(folder, stage=stage).staged_logs
    stored = stored_spans(tmp_path / "stage")
    assert before is not None and before.num_rows == 200 and len(stored) == len(files)
    gained = [t.spans[-1] for t in traces[:3]] + [s for t in traces[200:] for s in t.spans]
    (folder / "traces" / "traces.json").write_text(one_line(gained))
    after = load_dataset(folder, stage=stage).staged_logs
    now = stored_spans(tmp_path / "stage")
    assert len(now) == len(files) + 1 and {k: now[k] for k in stored} == stored
    fresh = load_dataset(folder, stage=LogStage(storage_path(tmp_path / "fresh"))).staged_logs
    assert after is not None and fresh is not None and after.num_rows == len(traces)
    assert after.days == fresh.days
    for day, frame in day_files(after).items():
        pd.testing.assert_frame_equal(frame, day_files(fresh)[day], check_exact=True)
    write_otlp(tmp_path / "whole" / "traces", traces[:3])  # the three traces, complete
    completed = trace_interactions(tmp_path / "whole")
    rows = trace_interactions(folder).set_index("log_id").loc[completed["log_id"]]
    pd.testing.assert_frame_equal(rows.reset_index(), completed, check_exact=True)
    assert not list((tmp_path / "stage").glob(".*.tmp"))  # nothing left half built


def test_a_file_with_problems_stores_nothing_and_is_read_again(
    traces: list[RawTrace], tmp_path: Path
) -> None:
    """A file whose reader finds a problem keeps no stored spans (the version is refused,
    naming its line); once fixed it is parsed and stored, the good files' spans reused."""
    folder = write_version(tmp_path / "v1", "json", traces[:60])
    good = len(list((folder / "traces").iterdir()))
    bad = folder / "traces" / "z-late.json"
    bad.write_text(one_line(traces[60].spans) + "{not json\n")
    stage = LogStage(storage_path(tmp_path / "stage"))
    with pytest.raises(DatasetError) as refused:
        load_dataset(folder, stage=stage)
    assert [(i.file, i.line) for i in refused.value.issues] == [("traces/z-late.json", 2)]
    stored = stored_spans(tmp_path / "stage")
    assert len(stored) == good
    bad.write_text(one_line(traces[60].spans))
    staged = load_dataset(folder, stage=stage).staged_logs
    assert staged is not None and staged.num_rows == 61
    now = stored_spans(tmp_path / "stage")
    assert len(now) == good + 1 and {k: now[k] for k in stored} == stored


def test_a_traces_folder_without_a_span_stages_every_column(tmp_path: Path) -> None:
    """Empty trace files: no row, but the columns and types of the whole table's staging."""
    folder = write_version(tmp_path / "v1", "json", [])
    (folder / "traces" / "traces.json").write_text("\n")
    before = LogStage(storage_path(tmp_path / "before")).stage(
        "key", TableBatches.of(with_log_ids(load_dataset(folder).logs, 0)).frames()
    )
    staged = load_dataset(folder, stage=LogStage(storage_path(tmp_path / "stage"))).staged_logs
    assert staged is not None and staged.num_rows == 0 == before.num_rows
    now = pd.concat(staged.whole().frames(), ignore_index=True)
    assert len(now.columns) > 10
    pd.testing.assert_frame_equal(now, pd.concat(before.whole().frames(), ignore_index=True))


def test_stored_spans_are_a_stage_entry_like_any_other(
    traces: list[RawTrace], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file's stored spans follow the stage's one rule: reading them records their use
    (`_used`), a truncated manifest is one warning and the file parsed again (the same rows),
    and the cleanup removes the ones unused past the keep time, not the copy still in use."""
    folder = write_version(tmp_path / "v1", "json", traces[:40])
    root = tmp_path / "stage"
    assert load_dataset(folder, stage=LogStage(storage_path(root))).staged_logs is not None
    entries = sorted(root.glob("spans-*"))
    assert entries and all((entry / "_used").is_file() for entry in entries)
    manifest = entries[0] / "_staged.json"
    manifest.write_bytes(manifest.read_bytes()[:10])
    store = SpanStore.under(storage_path(root))
    with caplog.at_level(logging.WARNING):
        again = pd.concat(list(trace_interaction_chunks(folder, store=store)))
    assert f"{manifest} does not read" in caplog.text and "parsed again" in caplog.text
    assert json.loads(manifest.read_text())["label"].startswith("traces/")
    assert sorted(again["log_id"]) == sorted(trace_interactions(folder)["log_id"])
    weeks_ago = time.time() - 8 * 86_400
    for entry in entries:
        os.utime(entry / "_used", (weeks_ago, weeks_ago))
    removed = prune_stage(storage_path(root), 7 * 86_400, 3_600)
    assert sorted(Path(r.path).name for r in removed) == [e.name for e in entries]
    kept = [p for p in root.iterdir() if not p.name.startswith(".")]
    assert len(kept) == 1 and (kept[0] / "_staged.json").is_file()  # the staged copy, in use
