"""A dataset version as validated tables: the golden dataset every tier evaluates against.

`load_dataset` reads a version folder, validates every table and the references between them,
and raises one `DatasetError` listing every problem (file, row, column) instead of the first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from datetime import date
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.errors import DatasetError, ValidationIssue
from rag_eval_pipeline.datasets.formats import (
    EVALUATION_FORMATS,
    EVALUATION_SCHEMAS,
    beir_corpus,
    beir_queries,
    evaluation_tables,
)
from rag_eval_pipeline.datasets.lines import max_record_bytes
from rag_eval_pipeline.datasets.log_chunks import (
    STAGED_ROWS_RULE,
    validated_log_chunks,
    validated_log_frames,
    with_log_ids,
)
from rag_eval_pipeline.datasets.manifest import DatasetManifest, read_manifest
from rag_eval_pipeline.datasets.readers import (
    IrregularLayout,
    first_columns,
    read_qrels,
    read_table,
    read_trec_run,
    trec_run_batches,
)
from rag_eval_pipeline.datasets.staged_logs import LogStage, StagedLogs, stage_key
from rag_eval_pipeline.datasets.traces import (
    TRACES_FOLDER,
    has_traces,
    trace_interaction_chunks,
    trace_interactions,
)
from rag_eval_pipeline.datasets.traces.span_store import SpanStore
from rag_eval_pipeline.datasets.validation import (
    MAX_TEXT_CHARS,
    SCHEMAS,
    TableSchema,
    TableValidator,
    max_id_chars,
)
from rag_eval_pipeline.datasets.versions import (
    escapes_folder,
    find_table_file,
    validate_version_name,
)
from rag_eval_pipeline.metrics.traffic import on_date, time_ordered
from rag_eval_pipeline.storage.batches import CHUNK_ROWS, TableBatches, query_chunks
from rag_eval_pipeline.storage.file_fingerprint import files_fingerprint

REQUIRED_TABLES = ("queries", "qrels")
OPTIONAL_TABLES = ("corpus", "logs", "judge_labels", "answers")
LAYOUTS = (
    "a version holds queries.* and qrels.* (or BEIR's qrels/<split>.tsv), "
    "or one ragas.* or deepeval.* table"
)
BEIR_RENAMES = {"corpus": beir_corpus, "queries": beir_queries}


@dataclass(frozen=True)
class GoldenDataset:
    """The validated tables of one dataset version; optional tables are None when absent."""

    version: str
    queries: pd.DataFrame
    qrels: pd.DataFrame
    corpus: pd.DataFrame | None = None
    runs: TableBatches | None = None
    logs: pd.DataFrame | None = None
    judge_labels: pd.DataFrame | None = None
    answers: pd.DataFrame | None = None
    manifest: DatasetManifest = field(default_factory=DatasetManifest)
    staged_logs: StagedLogs | None = None

    def tables(self) -> dict[str, pd.DataFrame]:
        """The present tables by name, as stored by the `golden_dataset` asset."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if isinstance(getattr(self, f.name), pd.DataFrame)
        }

    def stored_tables(self, day: date | None = None) -> dict[str, pd.DataFrame | TableBatches]:
        """`tables()`, the runs (chunked) and the manifest as a one-row `manifest` table; logs
        with timestamps in the day order (`time_ordered`), so the traffic tier reads one day
        of them by pushing its time filter down to the Parquet row groups. Staged logs are
        streamed: those around `day` (`StagedLogs.window`), every one when `day` is None."""
        tables: dict[str, pd.DataFrame | TableBatches] = dict(self.tables())
        if self.logs is not None and "timestamp" in self.logs.columns:
            tables["logs"] = time_ordered(self.logs)
        if self.staged_logs is not None:
            staged = self.staged_logs
            tables["logs"] = staged.whole() if day is None else staged.window(day)
        if self.runs is not None:
            tables["runs"] = self.runs
        return {**tables, "manifest": self.manifest.to_frame()}

    @classmethod
    def from_tables(
        cls,
        version: str,
        tables: dict[str, pd.DataFrame | TableBatches],
        day: date | None = None,
        timezone: str = "UTC",
    ) -> GoldenDataset:
        """Rebuild from the tables the `golden_dataset` asset stored; logs stored streamed
        (staged) come back as those of `day` in `timezone` and the undated ones (all when
        `day` is None)."""
        data = dict(tables)
        manifest = DatasetManifest.from_frame(data.pop("manifest", None))
        if isinstance(data.get("logs"), TableBatches):
            data["logs"] = _logs_of_day(data["logs"], day, timezone)
        runs = data.get("runs")
        if isinstance(runs, pd.DataFrame):  # stored whole by an earlier version of this asset
            data["runs"] = TableBatches.of(
                runs.sort_values(["system", "query_id"], kind="stable", ignore_index=True)
            )
        return cls(version=version, manifest=manifest, **data)

    @property
    def relevance_level(self) -> int:
        """The lowest relevant qrels grade (`dataset.yaml` `relevance_level`, trec_eval -l)."""
        return self.manifest.relevance_level

    @property
    def has_corpus(self) -> bool:
        """Whether the version ships document texts (Tiers 0, 2 and 3 need them)."""
        return self.corpus is not None and len(self.corpus) > 0

    @property
    def has_ground_truth_answers(self) -> bool:
        """Whether some questions carry a reference answer (ROUGE, BLEU, E2E)."""
        return (
            "ground_truth_answer" in self.queries.columns
            and self.queries["ground_truth_answer"].notna().any()
        )

    @property
    def relevant_qrels(self) -> pd.DataFrame:
        """Judgments with grade ≥ the relevance level (the documents counted as relevant)."""
        return self.qrels[self.qrels["relevance"] >= self.relevance_level]

    def statistics(self) -> dict[str, int]:
        """Row counts of every table, for metadata and the scorecard."""
        stats = {f"n_{name}": len(frame) for name, frame in self.tables().items()}
        if self.staged_logs is not None:
            stats["n_logs"] = self.staged_logs.num_rows
        if self.runs is not None:
            stats["n_runs"] = self.runs.num_rows
        if "session_id" in self.queries.columns:
            stats["n_sessions"] = int(self.queries["session_id"].nunique())
        return stats


def _logs_of_day(logs: TableBatches, day: date | None, timezone: str) -> pd.DataFrame:
    """The rows of `logs` on `day` in `timezone` or without a timestamp, chunk by chunk."""
    kept = [
        chunk
        if day is None
        else chunk[on_date(chunk["timestamp"], day, timezone) | chunk["timestamp"].isna()]
        for chunk in logs.frames()
    ]
    return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()


@dataclass(frozen=True)
class DatasetLimits:
    """Bounds on what a dataset folder may hold, so a huge file or text is an error, not an
    out-of-memory kill (`RAG_EVAL_MAX_FILE_MB`, `RAG_EVAL_MAX_TEXT_CHARS`)."""

    max_file_bytes: int = 2048 * 1024 * 1024
    max_text_chars: int = MAX_TEXT_CHARS


def _validated(
    frame: pd.DataFrame,
    schema_name: str,
    file: str,
    issues: list[ValidationIssue],
    limits: DatasetLimits,
) -> tuple[pd.DataFrame, TableValidator]:
    validator = TableValidator(frame, file, limits.max_text_chars)
    table = validator.check_schema(SCHEMAS.get(schema_name) or EVALUATION_SCHEMAS[schema_name])
    issues.extend(validator.issues)
    return table, validator


def load_dataset(
    folder: Path,
    version: str | None = None,
    limits: DatasetLimits | None = None,
    stage: LogStage | None = None,
) -> GoldenDataset:
    """Read and validate the dataset version stored in `folder`.

    The folder holds our tables, a BEIR folder (`qrels/<split>.tsv`) or one ragas/deepeval
    evaluation table (`ragas.*`, `deepeval.*`), plus an optional `dataset.yaml`. Raises
    `DatasetError` naming file, row and column for: missing files or columns, bad types,
    duplicate ids, empty texts, non-integer grades, bad `dataset.yaml` settings, files that are
    symlinks out of the folder, files and texts over `limits`, and references to unknown
    queries or documents (qrels, runs, logs, answers).

    With a `stage`, timestamped interactions (but a `traffic_replay` version's) are read once
    and kept staged by day (`datasets.staged_logs`, `_LogsPlan`): the dataset's `staged_logs`,
    not `logs`; a logs file is then validated chunk by chunk (no file-size limit).
    """
    limits = limits or DatasetLimits()
    folder = Path(folder)
    version = validate_version_name(version or folder.name)
    if not folder.is_dir():
        raise DatasetError(str(folder), [ValidationIssue(str(folder), "no such dataset folder")])
    manifest, issues = read_manifest(folder)
    plan = _LogsPlan.of(folder, manifest, limits, stage)
    tables: dict[str, pd.DataFrame | TableBatches] = {}
    validators: dict[str, TableValidator] = {}
    evaluation = [(f, p) for f in EVALUATION_FORMATS if (p := find_table_file(folder, f))]
    if len(evaluation) > 1:
        names = " and ".join(path.name for _, path in evaluation)
        issues.append(ValidationIssue(names, "one evaluation table per version, not both"))
    elif evaluation:
        table_format, path = evaluation[0]
        tables, validators = _evaluation_table(folder, table_format, path, issues, limits)
        if manifest.system is None:
            manifest = manifest.model_copy(update={"system": "logged"})
    else:
        tables, validators = _version_tables(folder, manifest, plan.deferred, issues, limits)
    known = _RunReferences.of(tables) if "queries" in tables and not issues else None
    run_issues: list[ValidationIssue] = []
    runs = _load_runs(folder, limits, known, run_issues)
    if runs is not None:
        tables["runs"] = runs
    if "queries" in tables and not issues:
        _check_references(tables, validators)
        issues = [issue for v in validators.values() for issue in v.issues]
    issues = [*issues, *run_issues]
    staged = plan.staged_logs(tables, issues, limits)
    if issues:
        raise DatasetError(f"'{version}' ({folder})", issues)
    if not evaluation and _is_beir(folder, manifest.split):
        judged = tables["queries"]["query_id"].isin(set(tables["qrels"]["query_id"]))
        tables["queries"] = tables["queries"][judged].reset_index(drop=True)
    return GoldenDataset(version=version, manifest=manifest, staged_logs=staged, **tables)


@dataclass(frozen=True)
class _LogsPlan:
    """How `load_dataset` reads a version's interactions under a `LogStage`.

    `found`: the copy staged for these very files (then nothing is read again); `chunked`: a
    logs file (any table format) whose first record has a `timestamp`, validated and staged in
    one chunked pass after the other tables (`deferred`); `traces`: a `traces/` folder, read in
    bounded memory and staged the same way (`_stage_traces`); otherwise the logs are read whole
    as without a stage, and staged once valid.
    """

    folder: Path
    stage: LogStage | None = None
    key: str = ""
    found: StagedLogs | None = None
    chunked: Path | None = None
    traces: bool = False

    @staticmethod
    def of(
        folder: Path, manifest: DatasetManifest, limits: DatasetLimits, stage: LogStage | None
    ) -> _LogsPlan:
        traces = has_traces(folder)
        path = None if traces else find_table_file(folder, "logs")
        if stage is None or manifest.traffic_replay or not (traces or path):
            return _LogsPlan(folder)
        key = interactions_key(folder, limits)
        found = stage.find(key)
        if found is None and path is not None and _timestamped_logs(folder, path):
            return _LogsPlan(folder, stage, key, chunked=path)
        return _LogsPlan(folder, stage, key, found, traces=traces and found is None)

    @property
    def deferred(self) -> bool:
        """The loop over tables skips the logs (found staged, or read in chunks later)."""
        return self.found is not None or self.chunked is not None or self.traces

    def staged_logs(
        self,
        tables: dict[str, pd.DataFrame | TableBatches],
        issues: list[ValidationIssue],
        limits: DatasetLimits,
    ) -> StagedLogs | None:
        """The staged logs (staging them now if need be, problems added to `issues`); a whole
        `logs` table staged is removed from `tables`."""
        if self.stage is None or self.found is not None:
            return self.found
        if self.chunked is not None:
            return self._stage_chunked(tables, issues, limits)
        if self.traces:
            return self._stage_traces(tables, issues, limits)
        logs = tables.get("logs")
        if issues or not isinstance(logs, pd.DataFrame) or "timestamp" not in logs.columns:
            return None
        del tables["logs"]
        return self.stage.stage(self.key, TableBatches.of(with_log_ids(logs, 0)).frames())

    def _stage_chunked(
        self,
        tables: dict[str, pd.DataFrame | TableBatches],
        issues: list[ValidationIssue],
        limits: DatasetLimits,
    ) -> StagedLogs | None:
        """Validate the logs file chunk by chunk and stage it in the same pass
        (`_stage_validated`); its reader's problems name the file by its path in the folder."""
        assert self.chunked is not None
        name, label = self.chunked.name, self.chunked.relative_to(self.folder).as_posix()
        known = _corpus_ids(tables, issues)
        chunks = validated_log_chunks(self.chunked, label, limits.max_text_chars, known)
        return self._stage_validated(chunks, issues, lambda found: _named(found, name, label))

    def _stage_traces(
        self,
        tables: dict[str, pd.DataFrame | TableBatches],
        issues: list[ValidationIssue],
        limits: DatasetLimits,
    ) -> StagedLogs | None:
        """Read `traces/` in bounded memory (`trace_interaction_chunks`: day by day, rows
        numbered as in the whole table; each file parsed once, its spans kept under the stage,
        `span_store`), validated and staged in one pass (`_stage_validated`)."""
        assert self.stage is not None
        days = trace_interaction_chunks(self.folder, store=SpanStore.under(self.stage.root))
        label = f"{TRACES_FOLDER}/"
        known = _corpus_ids(tables, issues)
        chunks = validated_log_frames(days, label, limits.max_text_chars, known, TRACES_FOLDER)
        return self._stage_validated(chunks, issues, lambda found: found)

    def _stage_validated(
        self,
        chunks: Iterator[pd.DataFrame],
        issues: list[ValidationIssue],
        named: Callable[[list[ValidationIssue]], list[ValidationIssue]],
    ) -> StagedLogs | None:
        """Stage the validated `chunks`: a problem raises out of the staging in progress, which
        publishes nothing, and its problems (`named`) go to `issues`. When the version is
        refused anyway (`issues`), the chunks are only validated."""
        assert self.stage is not None
        try:
            if issues:
                for _ in chunks:
                    pass
                return None
            return self.stage.stage(self.key, chunks)
        except DatasetError as error:
            issues.extend(named(error.issues))
        return None


def _corpus_ids(
    tables: dict[str, pd.DataFrame | TableBatches], issues: list[ValidationIssue]
) -> set[str] | None:
    """The corpus's ids the interactions' references are checked against; None when there is
    no corpus or the other tables already hold a problem (references are then not checked)."""
    corpus = tables.get("corpus")
    return None if issues or corpus is None else set(corpus["doc_id"])


def interactions_key(folder: Path, limits: DatasetLimits) -> str:
    """The name of a version's staged interactions: the digest of what their rows depend on,
        the interaction files (`traces/`, else `logs.*`), the corpus file whose ids they are checked
        against, the limits they were validated under (file size, text length, id length, record
    size) and the rule that reads them
        (`STAGED_ROWS_RULE`). Another file of the version (queries, qrels, runs, labels,
        `dataset.yaml`) changes nothing staged: the copy is reused."""
    logs = find_table_file(folder, "logs")
    corpus = find_table_file(folder, "corpus")
    files = [TRACES_FOLDER] if has_traces(folder) else [logs.name] if logs else []
    only = tuple(files + ([corpus.name] if corpus else []))
    fingerprint = files_fingerprint(folder, only=only)
    limits_read = (limits.max_file_bytes, limits.max_text_chars, max_id_chars(), max_record_bytes())
    return stage_key(fingerprint, *limits_read, STAGED_ROWS_RULE)


def _timestamped_logs(folder: Path, path: Path) -> bool:
    """`path` is a logs file of the folder whose first record has a `timestamp` (any other
    file takes the whole-table path and its messages)."""
    return not escapes_folder(folder, path) and "timestamp" in first_columns(path)


def _named(issues: list[ValidationIssue], name: str, label: str) -> list[ValidationIssue]:
    """`issues` of a reader, which names its file `name`, with the file named `label` (its
    path within the version folder)."""
    return [replace(issue, file=label) if issue.file == name else issue for issue in issues]


def _version_tables(
    folder: Path,
    manifest: DatasetManifest,
    skip_logs: bool,
    issues: list[ValidationIssue],
    limits: DatasetLimits,
) -> tuple[dict[str, pd.DataFrame | TableBatches], dict[str, TableValidator]]:
    """Our tables (or BEIR's) of the version, validated one by one (`skip_logs`: the logs are
    read elsewhere, `_LogsPlan`)."""
    tables: dict[str, pd.DataFrame | TableBatches] = {}
    validators: dict[str, TableValidator] = {}
    for name in REQUIRED_TABLES:
        if _table_path(folder, name, manifest) is None:
            issues.append(ValidationIssue(f"{name}.*", f"required file is missing ({LAYOUTS})"))
    for name in ("queries", "qrels", *OPTIONAL_TABLES):
        if name == "logs" and skip_logs:
            continue
        if name == "logs" and has_traces(folder):  # traces win over logs.* (docs/traces.md)
            raw = _read_traces(folder, issues)
            if raw is not None:
                tables[name], validators[name] = _validated(
                    raw, name, f"{TRACES_FOLDER}/", issues, limits
                )
            continue
        path = _table_path(folder, name, manifest)
        if path is None:
            continue
        reader = read_qrels if name == "qrels" else read_table
        raw = _read(folder, path, reader, issues, limits)
        if raw is not None:
            beir_names = BEIR_RENAMES.get(name)
            raw = beir_names(raw) if beir_names else raw
            label = path.relative_to(folder).as_posix()
            tables[name], validators[name] = _validated(raw, name, label, issues, limits)
    return tables, validators


def _read(
    folder: Path,
    path: Path,
    reader: Callable[[Path], pd.DataFrame],
    issues: list[ValidationIssue],
    limits: DatasetLimits,
) -> pd.DataFrame | None:
    """`reader(path)`, or None with the problems added to `issues`."""
    label = path.relative_to(folder).as_posix()
    if escapes_folder(folder, path):
        issues.append(ValidationIssue(label, "is a link to a file outside the dataset folder"))
        return None
    size = path.stat().st_size
    if size > limits.max_file_bytes:
        issues.append(
            ValidationIssue(
                label,
                f"{size:,} bytes, over the {limits.max_file_bytes:,}-byte limit "
                "(RAG_EVAL_MAX_FILE_MB)",
            )
        )
        return None
    try:
        return reader(path)
    except DatasetError as error:  # readers name the file; here it is named within the folder
        issues.extend(_named(error.issues, path.name, label))
        return None


def _table_path(folder: Path, name: str, manifest: DatasetManifest) -> Path | None:
    """The file holding table `name`: `<name>.<ext>`, or BEIR's `qrels/<split>.tsv`."""
    path = find_table_file(folder, name)
    if path is None and name == "qrels":
        return _beir_qrels(folder, manifest.split)
    return path


def _read_traces(folder: Path, issues: list[ValidationIssue]) -> pd.DataFrame | None:
    """The interactions of the folder's `traces/`, or None with the problem added to `issues`."""
    try:
        return trace_interactions(folder)
    except DatasetError as error:
        issues.extend(error.issues)
        return None


def _beir_qrels(folder: Path, split: str) -> Path | None:
    path = folder / "qrels" / f"{split}.tsv"
    return path if path.is_file() else None


def _is_beir(folder: Path, split: str) -> bool:
    return find_table_file(folder, "qrels") is None and _beir_qrels(folder, split) is not None


def _evaluation_table(
    folder: Path,
    table_format: str,
    path: Path,
    issues: list[ValidationIssue],
    limits: DatasetLimits,
) -> tuple[dict[str, pd.DataFrame], dict[str, TableValidator]]:
    """The tables of a ragas or deepeval evaluation table (see `datasets.formats`)."""
    others = [name for name in ("queries", "qrels") if find_table_file(folder, name)]
    if others:
        issues.append(
            ValidationIssue(
                path.name,
                f"a {table_format} table is a whole version: remove it or {', '.join(others)}",
            )
        )
        return {}, {}
    raw = _read(folder, path, read_table, issues, limits)
    if raw is None:
        return {}, {}
    before = len(issues)
    table, _ = _validated(raw, table_format, path.name, issues, limits)
    if len(issues) > before:
        return {}, {}
    tables = evaluation_tables(table, table_format)
    validators: dict[str, TableValidator] = {}
    for name, frame in tables.items():
        tables[name], validators[name] = _validated(frame, name, path.name, issues, limits)
    return tables, validators


def _check_references(
    tables: dict[str, pd.DataFrame], validators: dict[str, TableValidator]
) -> None:
    """Ids in qrels and logs must exist in queries and (when shipped) the corpus (runs: see
    `_RunReferences`)."""
    query_ids = set(tables["queries"]["query_id"])
    corpus_ids = set(tables["corpus"]["doc_id"]) if "corpus" in tables else None
    answers = [validators["answers"]] if "answers" in validators else []
    for validator in [validators["qrels"], *answers]:
        validator.check_references("query_id", query_ids, "queries")
        if corpus_ids is not None:
            validator.check_references("doc_id", corpus_ids, "corpus")
    if "logs" in validators and corpus_ids is not None:
        validators["logs"].check_references("shown_doc_id", corpus_ids, "corpus")
    for name in ("logs", "answers"):
        if name in validators and corpus_ids is not None:
            validators[name].check_list_references("retrieved_doc_ids", corpus_ids, "corpus")
    queries = tables["queries"]
    if "turn" in queries.columns and "session_id" in queries.columns:
        orphan = (queries["turn"].notna() & queries["session_id"].isna()).to_numpy()
        validators["queries"].report(
            orphan, "session_id", "turn {value} needs a session_id", queries["turn"]
        )
        sessions = queries.dropna(subset=["session_id"])
        repeated = sessions.duplicated(["session_id", "turn"]).reindex(queries.index)
        validators["queries"].report(
            repeated.fillna(False).to_numpy(dtype=bool),
            "turn",
            "duplicate turn within a session: {value}",
            lambda position: (
                f"session {queries['session_id'].iloc[position]}, "
                f"turn {queries['turn'].iloc[position]}"
            ),
        )


@dataclass(frozen=True)
class _RunReferences:
    """The ids a run may name: queries, and documents when the version ships a corpus."""

    query_ids: pd.Index
    doc_ids: pd.Index | None

    @staticmethod
    def of(tables: dict[str, pd.DataFrame | TableBatches]) -> _RunReferences:
        corpus = tables.get("corpus")
        return _RunReferences(
            query_ids=pd.Index(tables["queries"]["query_id"], dtype=object),
            doc_ids=None if corpus is None else pd.Index(corpus["doc_id"], dtype=object),
        )

    def check(self, validator: TableValidator) -> None:
        validator.check_references("query_id", self.query_ids, "queries")
        if self.doc_ids is not None:
            validator.check_references("doc_id", self.doc_ids, "corpus")


MAX_RUN_ISSUES = 100
RUN_BLOCK_BYTES: int | None = None  # Arrow's block size (None: `ARROW_BLOCK_BYTES`)
RUN_CHUNK_ROWS = CHUNK_ROWS


def _load_runs(
    folder: Path,
    limits: DatasetLimits,
    known: _RunReferences | None,
    issues: list[ValidationIssue],
) -> TableBatches | None:
    """The validated runs of `runs/*.trec`, read again chunk by chunk when iterated.

    A run with one record per line and each query's rows together is validated in one pass of
    query-complete chunks (bounded memory, so no file-size limit applies); any other layout is
    read whole (within `limits`) and sorted by query, which the chunked consumers need.
    """
    runs: list[TableBatches] = []
    for path in sorted((folder / "runs").glob("*.trec")):
        label = f"runs/{path.name}"
        if not path.is_file():
            issues.append(ValidationIssue(label, "is not a file"))
            continue
        if escapes_folder(folder, path):
            issues.append(ValidationIssue(label, "is a link to a file outside the dataset folder"))
            continue
        try:
            num_rows, file_issues = _scan_run(path, label, limits, known)
        except IrregularLayout:
            run = _read(folder, path, read_trec_run, issues, limits)
            if run is None:
                continue
            table, validator = _validated(run, "runs", label, issues, limits)
            if known is not None:
                known.check(validator)
                issues.extend(validator.issues)
            table = table.sort_values("query_id", kind="stable").reset_index(drop=True)
            runs.append(TableBatches.of(table))
            continue
        issues.extend(file_issues)
        runs.append(TableBatches(num_rows, partial(_run_chunks, path, label, limits)))
    return TableBatches.concat(runs) if runs else None


def _run_chunks(path: Path, label: str, limits: DatasetLimits) -> Iterator[pd.DataFrame]:
    """The coerced query-complete chunks of a run file that `_scan_run` accepted (the key
    check, the slowest, is not repeated)."""
    for table, _ in _validated_run_chunks(path, label, limits, None, _RUNS_COERCION):
        yield table


def _scan_run(
    path: Path, label: str, limits: DatasetLimits, known: _RunReferences | None
) -> tuple[int, list[ValidationIssue]]:
    """Validate a run file chunk by chunk: its row count and issues (the first ones)."""
    num_rows, issues = 0, []
    for table, chunk_issues in _validated_run_chunks(path, label, limits, known):
        num_rows += len(table)
        issues.extend(chunk_issues)
        if len(issues) >= MAX_RUN_ISSUES:
            issues.append(ValidationIssue(label, "too many problems: the rest was not checked"))
            break
    return num_rows, issues


_RUNS_COERCION = replace(SCHEMAS["runs"], key=())


def _validated_run_chunks(
    path: Path,
    label: str,
    limits: DatasetLimits,
    known: _RunReferences | None,
    schema: TableSchema = SCHEMAS["runs"],
) -> Iterator[tuple[pd.DataFrame, list[ValidationIssue]]]:
    """Query-complete chunks of a run file, coerced, with their issues.

    Raises `IrregularLayout` for a layout the chunked reader does not take, including a query
    whose rows are not all together (its duplicates could span two chunks).
    """
    first_row = 1
    finished = np.empty(0, np.uint64)
    batches = trec_run_batches(path, RUN_BLOCK_BYTES)
    for chunk in query_chunks(batches, ["query_id"], RUN_CHUNK_ROWS):
        queries = np.unique(pd.util.hash_array(pd.unique(chunk["query_id"]).astype(object)))
        if np.isin(queries, finished, assume_unique=True).any():
            raise IrregularLayout(path)
        finished = np.union1d(finished, queries)
        chunk.attrs["lines"] = np.arange(first_row, first_row + len(chunk))
        validator = TableValidator(chunk, label, limits.max_text_chars, first_row=first_row)
        table = validator.check_schema(schema)
        if known is not None:
            known.check(validator)
        first_row += len(chunk)
        yield table, validator.issues
