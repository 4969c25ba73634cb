"""A dataset's `traces/` folder as interactions: one row per trace, in the `logs.*` columns.

Files are read one after the other and each span is reduced as it is read (`Span`: only the
mapped attributes), then grouped by trace id in bounded memory (`buckets`). The root span (no
parent; else the earliest span whose parent is not in the export) is the interaction: `log_id`
= trace id, `timestamp` = its start, `latency_ms` = its duration, `error` = its ERROR status or
`exception` event (else the entry span's). The entry span (the root, or the span closest to it
that records an `input.value`, as under an HTTP server span) gives `question`/`answer` = its
`input.value`/`output.value` (the question else the first RETRIEVER span's input);
`session_id`/`user_id` = `session.id`/`user.id` (the entry's, the root's, else any span's).
RETRIEVER spans give `retrieved_doc_ids`/`contexts` (`retrieval.documents.N.document.id` and
`.content`, spans in start order, each id once) and `retrieval_latency_ms`; LLM spans give
`generation_latency_ms` (both: the time covered by the union of the spans' intervals, so nested
or parallel calls count once), the token counts (`llm.token_count.*`, else `gen_ai.usage.*`)
and `cost_usd` (each call priced by litellm, summed; NaN when one is unknown). `feedback` is a
`feedback` attribute, else a user's feedback annotation (Phoenix). The full mapping table is in
docs/traces.md.

A value under `input.value`/`output.value` whose mime type is `application/json` and that holds
an object gives its `question`/`query`/`input` (resp. `answer`/`output`/`result`) text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.errors import DatasetError, ValidationIssue
from rag_eval_pipeline.datasets.traces.buckets import FileStore, Seen, Window, spilled_traces
from rag_eval_pipeline.datasets.traces.by_day import Call, Rows, joined, rows_by_day
from rag_eval_pipeline.datasets.traces.conventions import (
    FEEDBACK,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_REQUEST_MODEL,
    INPUT_MIME_TYPE,
    INPUT_VALUE,
    LLM,
    LLM_COMPLETION_TOKENS,
    LLM_MODEL_NAME,
    LLM_PROMPT_TOKENS,
    OUTPUT_MIME_TYPE,
    OUTPUT_VALUE,
    RETRIEVER,
    SESSION_ID,
    USER_ID,
    FileProblems,
    Span,
)
from rag_eval_pipeline.datasets.traces.detect import Reader, trace_reader
from rag_eval_pipeline.datasets.versions import escapes_folder, find_table_file
from rag_eval_pipeline.metrics.traffic import token_costs
from rag_eval_pipeline.text.shown import shown_value

TRACES_FOLDER = "traces"
INTERACTION_COLUMNS = [
    "log_id",
    "timestamp",
    "question",
    "answer",
    "retrieved_doc_ids",
    "contexts",
    "session_id",
    "user_id",
    "latency_ms",
    "retrieval_latency_ms",
    "generation_latency_ms",
    "error",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "feedback",
]
QUESTION_KEYS = ("question", "query", "input", "user_input")
ANSWER_KEYS = ("answer", "output", "result", "response")
JSON_MIME = "application/json"

CLOCK_SKEW_NS = 60 * 10**9
TRACE_MARGIN_NS = 24 * 3600 * 10**9


def has_traces(folder: Path) -> bool:
    """The version folder holds a `traces/` folder."""
    return (Path(folder) / TRACES_FOLDER).is_dir()


def trace_files(folder: Path) -> list[tuple[Path, str, Reader]]:
    """The trace files under `<folder>/traces/` (any depth, any name, hidden files skipped),
    sorted, each with its label (`traces/<path>`) and reader, chosen by the file's content
    (`detect.trace_reader`)."""
    root = Path(folder) / TRACES_FOLDER
    files = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            continue
        label = f"{TRACES_FOLDER}/{relative.as_posix()}"
        if escapes_folder(folder, path):
            raise _error(label, "is a link to a file outside the dataset folder")
        files.append((path, label, trace_reader(path, label)))
    return files


def logs_origin(folder: Path) -> str | None:
    """Where a version's interactions come from: `traces/ (N files)` (naming the `logs.*` file
    it wins over, when both exist), the `logs.*` file, or None."""
    logs = find_table_file(Path(folder), "logs")
    if not has_traces(folder):
        return None if logs is None else logs.name
    origin = f"{TRACES_FOLDER}/ ({len(trace_files(folder))} files)"
    return origin if logs is None else f"{origin}; {logs.name} ignored: traces/ wins"


def _error(label: str, message: str) -> DatasetError:
    return DatasetError(label, [ValidationIssue(label, message)])


def trace_interaction_chunks(
    folder: Path, day: Window | None = None, store: FileStore | None = None
) -> Iterator[pd.DataFrame]:
    """The interactions of `<folder>/traces/` (see `trace_interactions`) in bounded memory,
    one frame per UTC day, days in order, each in (`timestamp`, `log_id`) order: the spans
    spilled to buckets by trace (`buckets`), each bucket's rows spilled by day (`by_day`).
    Together they are `trace_interactions`'s rows, in its order. With a `store`, each file's
    spilled spans are kept there and a file parsed once (`span_store`). No trace: one frame
    without rows, every column."""
    empty = True
    for rows, calls in rows_by_day(_bucket_rows(folder, day, store)):
        empty = False
        yield _frame(rows, calls)
    if empty:
        yield _frame([], [])


def trace_interactions(folder: Path, day: Window | None = None) -> pd.DataFrame:
    """The interactions of `<folder>/traces/` (columns `INTERACTION_COLUMNS`), one per trace,
    in (`timestamp`, `log_id`) order: the rows of `trace_interaction_chunks`, in one frame.

    With `day` (UTC nanoseconds [start, end)): only the traces whose root starts in it, from
    the spans starting between `CLOCK_SKEW` before it and `TRACE_MARGIN` after it (a child
    span starts after its root, give or take the clock skew between hosts); a trace whose
    spans run past `TRACE_MARGIN` is cut, and one whose root span is missing (its children
    found without it) is not read by day."""
    return _frame(*joined(_bucket_rows(folder, day, None)))


def _bucket_rows(folder: Path, day: Window | None, store: FileStore | None) -> Iterator[Rows]:
    """Bucket by bucket (`buckets.spilled_traces`), the rows of its traces and their LLM calls
    (row position, model, prompt, completion); none once a trace had a problem. The problems
    of the traces raise at the end, in the order the folder first met the traces, up to
    `FileProblems.MAX_PROBLEMS` (the first ones, as a reading in that order stops there)."""
    window = None if day is None else (day[0] - CLOCK_SKEW_NS, day[1] + TRACE_MARGIN_NS)
    problems = _FirstProblems()
    with spilled_traces(trace_files(folder), TRACES_FOLDER, window, store) as spilled:
        for traces in spilled.traces():
            rows: list[dict[str, object]] = []
            calls: list[Call] = []
            for seen, spans in traces:
                ordered = sorted(spans.values(), key=lambda s: (s.start_ns, s.span_id))
                root = _root(ordered)
                if day is not None and (
                    root.parent_id is not None or not day[0] <= root.start_ns < day[1]
                ):
                    continue  # the root is on another day (or outside the export)
                try:
                    row, row_calls = _interaction(root, ordered, spilled.feedback)
                except DatasetError as error:
                    problems.add(seen, error)
                    continue
                calls.extend((len(rows), *call) for call in row_calls)
                rows.append(row)
            if rows and not problems.found:
                yield rows, calls
    problems.raise_if_any()


class _FirstProblems:
    """The traces' problems found in any order, kept as the first `MAX_PROBLEMS` in the order
    the traces were first met (`Seen`)."""

    def __init__(self) -> None:
        self.found: list[tuple[Seen, DatasetError]] = []

    def add(self, seen: Seen, error: DatasetError) -> None:
        self.found.append((seen, error))
        if len(self.found) > 2 * FileProblems.MAX_PROBLEMS:
            self.found = self._first()

    def _first(self) -> list[tuple[Seen, DatasetError]]:
        kept, count = [], 0
        for seen, error in sorted(self.found, key=lambda found: found[0]):
            if count >= FileProblems.MAX_PROBLEMS:
                break
            kept.append((seen, error))
            count += len(error.issues)
        return kept

    def raise_if_any(self) -> None:
        problems = FileProblems(TRACES_FOLDER)
        for _, error in self._first():
            problems.add(error)
        problems.raise_if_any()


def _frame(rows: list[dict[str, object]], calls: list[Call]) -> pd.DataFrame:
    """The interactions of `rows` (and their LLM calls, priced), in (`timestamp`, `log_id`)
    order."""
    frame = pd.DataFrame(rows, columns=[c for c in INTERACTION_COLUMNS if c != "cost_usd"])
    frame["timestamp"] = pd.to_datetime(frame["timestamp"].astype("int64"), utc=True)
    frame["cost_usd"] = _trace_costs(len(frame), calls)
    frame = frame[INTERACTION_COLUMNS].sort_values(["timestamp", "log_id"], kind="stable")
    return frame.reset_index(drop=True)


def _trace_costs(n_traces: int, calls: list[Call]) -> np.ndarray:
    """Per trace, the sum of its LLM calls priced by `token_costs` (NaN when one is unknown,
    or when it made none)."""
    cost = np.full(n_traces, np.nan)
    if not calls:
        return cost
    positions, models, prompt, completion = zip(*calls, strict=True)
    priced = token_costs(models, prompt, completion)
    positions = np.asarray(positions)
    called = np.unique(positions)
    cost[called] = 0.0
    np.add.at(cost, positions, priced)
    return cost


def _root(spans: list[Span]) -> Span:
    """The trace's root: its span without a parent, else (an incomplete export) the earliest
    span whose parent is not in it."""
    ids = {span.span_id for span in spans}
    return min(
        (s for s in spans if s.parent_id is None or s.parent_id not in ids),
        key=lambda s: (s.parent_id is not None, s.start_ns),
    )


def _entry(root: Span, spans: list[Span]) -> Span:
    """The span where the application received the question: the root when it records an
    `input.value`, else the span closest to the root that does (the earliest among equals), as
    when an HTTP server span wraps the instrumented chain; the root when none does."""
    parents = {span.span_id: span.parent_id for span in spans}

    def depth(span: Span) -> int:
        steps, parent = 0, span.parent_id
        while parent in parents and steps < len(parents):
            steps, parent = steps + 1, parents[parent]
        return steps

    asked = [s for s in spans if s.attributes.get(INPUT_VALUE) is not None]
    if root.attributes.get(INPUT_VALUE) is not None or not asked:
        return root
    return min(asked, key=lambda s: (depth(s), s.start_ns))


def _interaction(
    root: Span, spans: list[Span], feedback: dict[str, str]
) -> tuple[dict[str, object], list[tuple[object, float, float]]]:
    """One trace's row (without `cost_usd`) and its LLM calls (model, prompt, completion), from
    its root, its spans in start order and the feedback annotations by span id."""
    retrievers = [s for s in spans if s.kind == RETRIEVER]
    llms = [s for s in spans if s.kind == LLM]
    entry = _entry(root, spans)
    question = _text(entry, INPUT_VALUE, INPUT_MIME_TYPE, QUESTION_KEYS)
    if question is None and retrievers:
        question = _text(retrievers[0], INPUT_VALUE, INPUT_MIME_TYPE, QUESTION_KEYS)
    if question is None:
        raise DatasetError(
            root.source,
            [
                ValidationIssue(
                    root.source,
                    f"no span of trace {shown_value(root.trace_id)} has a question",
                    column=INPUT_VALUE,
                )
            ],
        )
    doc_ids, contexts = _documents(retrievers)
    calls = [
        (
            _first(llm, LLM_MODEL_NAME, GEN_AI_REQUEST_MODEL),
            _count(llm, LLM_PROMPT_TOKENS, GEN_AI_INPUT_TOKENS),
            _count(llm, LLM_COMPLETION_TOKENS, GEN_AI_OUTPUT_TOKENS),
        )
        for llm in llms
    ]
    models = {str(model) for model, _, _ in calls if model is not None}
    others = [entry, root, *(s for s in spans if s is not root and s is not entry)]
    row = {
        "log_id": root.trace_id,
        "timestamp": root.start_ns,
        "question": question,
        "answer": _text(entry, OUTPUT_VALUE, OUTPUT_MIME_TYPE, ANSWER_KEYS),
        "retrieved_doc_ids": doc_ids,
        "contexts": contexts or None,
        "session_id": _found(others, SESSION_ID),
        "user_id": _found(others, USER_ID),
        "latency_ms": (root.end_ns - root.start_ns) / 1e6,
        "retrieval_latency_ms": _covered_ms(retrievers),
        "generation_latency_ms": _covered_ms(llms),
        "error": root.error or entry.error,
        "model": models.pop() if len(models) == 1 else None,
        "prompt_tokens": sum(c[1] for c in calls) if calls else np.nan,
        "completion_tokens": sum(c[2] for c in calls) if calls else np.nan,
        "feedback": _found(others, FEEDBACK)
        or next((feedback[s.span_id] for s in others if s.span_id in feedback), None),
    }
    return row, calls


def _text(span: Span, key: str, mime_key: str, keys: tuple[str, ...]) -> str | None:
    value = span.attributes.get(key)
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value)
    if span.attributes.get(mime_key) == JSON_MIME:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return text
        if isinstance(parsed, dict):
            found = next((parsed[k] for k in keys if isinstance(parsed.get(k), str)), None)
            return found if found is not None else text
    return text


def _found(spans: list[Span], key: str) -> object:
    """The first value of attribute `key` among `spans` (None when none has it)."""
    return next((s.attributes[key] for s in spans if s.attributes.get(key) is not None), None)


def _first(span: Span, *keys: str) -> object:
    return next((span.attributes[k] for k in keys if span.attributes.get(k) is not None), None)


def _count(span: Span, *keys: str) -> float:
    """A token count (an int, a float or numeric text); NaN when absent."""
    value = _first(span, *keys)
    if value is None:
        return np.nan
    try:
        count = float(value)
    except (TypeError, ValueError):
        count = np.nan
    if not np.isfinite(count) or count < 0:
        raise DatasetError(
            span.source,
            [
                ValidationIssue(
                    span.source,
                    f"not a token count: {shown_value(value)}",
                    column=next(k for k in keys if span.attributes.get(k) is not None),
                )
            ],
        )
    return count


def _documents(retrievers: list[Span]) -> tuple[list[str], list[str]]:
    """Retrieved ids and contents, spans in start order, each id once (first position)."""
    ids: list[str] = []
    contents: list[str] = []
    seen: set[str] = set()
    for span in retrievers:
        for doc_id, content, _score in span.documents:
            if doc_id is not None:
                if str(doc_id) in seen:
                    continue
                seen.add(str(doc_id))
                ids.append(str(doc_id))
            if isinstance(content, str) and content.strip():
                contents.append(content)
    return ids, contents


def _covered_ms(spans: list[Span]) -> float:
    """Milliseconds covered by the union of the spans' [start, end] intervals (NaN: none)."""
    if not spans:
        return np.nan
    covered, (start, end) = 0, (spans[0].start_ns, spans[0].end_ns)
    for span in spans[1:]:  # sorted by start
        if span.start_ns > end:
            covered += end - start
            start, end = span.start_ns, span.end_ns
        else:
            end = max(end, span.end_ns)
    return (covered + end - start) / 1e6
