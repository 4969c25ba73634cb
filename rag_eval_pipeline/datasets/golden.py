"""A dataset version as validated tables: the golden dataset every tier evaluates against.

`load_dataset` reads a version folder, validates every table and the references between them,
and raises one `DatasetError` listing every problem (file, row, column) instead of the first.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd

from rag_eval_pipeline.datasets.errors import DatasetError, ValidationIssue
from rag_eval_pipeline.datasets.readers import read_qrels, read_table, read_trec_run
from rag_eval_pipeline.datasets.validation import SCHEMAS, TableValidator
from rag_eval_pipeline.datasets.versions import find_table_file, validate_version_name

OPTIONAL_TABLES = ("corpus", "logs", "judge_labels", "answers")


@dataclass(frozen=True)
class GoldenDataset:
    """The validated tables of one dataset version; optional tables are None when absent."""

    version: str
    queries: pd.DataFrame
    qrels: pd.DataFrame
    corpus: pd.DataFrame | None = None
    runs: pd.DataFrame | None = None
    logs: pd.DataFrame | None = None
    judge_labels: pd.DataFrame | None = None
    answers: pd.DataFrame | None = None

    def tables(self) -> dict[str, pd.DataFrame]:
        """The present tables by name, as stored by the `golden_dataset` asset."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if isinstance(getattr(self, f.name), pd.DataFrame)
        }

    @classmethod
    def from_tables(cls, version: str, tables: dict[str, pd.DataFrame]) -> GoldenDataset:
        """Rebuild from the tables the `golden_dataset` asset stored."""
        return cls(version=version, **tables)

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
        """Judgments with grade ≥ 1 (the documents counted as relevant)."""
        return self.qrels[self.qrels["relevance"] >= 1]

    def statistics(self) -> dict[str, int]:
        """Row counts of every table, for metadata and the scorecard."""
        stats = {f"n_{name}": len(frame) for name, frame in self.tables().items()}
        if self.runs is not None:
            stats["n_run_systems"] = int(self.runs["system"].nunique())
        if "session_id" in self.queries.columns:
            stats["n_sessions"] = int(self.queries["session_id"].nunique())
        return stats


def _validated(
    frame: pd.DataFrame, schema_name: str, file: str, issues: list[ValidationIssue]
) -> tuple[pd.DataFrame, TableValidator]:
    validator = TableValidator(frame, file)
    table = validator.check_schema(SCHEMAS[schema_name])
    issues.extend(validator.issues)
    return table, validator


def load_dataset(folder: Path, version: str | None = None) -> GoldenDataset:
    """Read and validate the dataset version stored in `folder`.

    Raises `DatasetError` naming file, row and column for: missing files or columns, bad types,
    duplicate ids, empty texts, non-integer grades, and references to unknown queries or
    documents (qrels, runs, logs).
    """
    folder = Path(folder)
    version = validate_version_name(version or folder.name)
    if not folder.is_dir():
        raise DatasetError(str(folder), [ValidationIssue(str(folder), "no such dataset folder")])
    issues: list[ValidationIssue] = []
    tables: dict[str, pd.DataFrame] = {}
    validators: dict[str, TableValidator] = {}
    for name in ("queries", "qrels", *OPTIONAL_TABLES):
        path = find_table_file(folder, name)
        if path is None:
            if name in ("queries", "qrels"):
                issues.append(ValidationIssue(f"{name}.*", "required file is missing"))
            continue
        try:
            raw = read_qrels(path) if name == "qrels" else read_table(path)
        except DatasetError as error:
            issues.extend(error.issues)
            continue
        tables[name], validators[name] = _validated(raw, name, path.name, issues)
    run_frames: list[pd.DataFrame] = []
    run_validators: list[TableValidator] = []
    for path in sorted((folder / "runs").glob("*.trec")):
        if not path.is_file():
            issues.append(ValidationIssue(f"runs/{path.name}", "is not a file"))
            continue
        try:
            raw_run = read_trec_run(path)
        except DatasetError as error:
            issues.extend(error.issues)
            continue
        run, validator = _validated(raw_run, "runs", f"runs/{path.name}", issues)
        run_frames.append(run)
        run_validators.append(validator)
    if run_frames:
        tables["runs"] = pd.concat(run_frames, ignore_index=True)
    if "queries" in tables and not issues:
        _check_references(tables, validators, run_validators)
        issues = [issue for v in [*validators.values(), *run_validators] for issue in v.issues]
    if issues:
        raise DatasetError(f"'{version}' ({folder})", issues)
    return GoldenDataset(version=version, **tables)


def _check_references(
    tables: dict[str, pd.DataFrame],
    validators: dict[str, TableValidator],
    run_validators: list[TableValidator],
) -> None:
    """Ids in qrels, runs and logs must exist in queries and (when shipped) the corpus."""
    query_ids = set(tables["queries"]["query_id"])
    corpus_ids = set(tables["corpus"]["doc_id"]) if "corpus" in tables else None
    answers = [validators["answers"]] if "answers" in validators else []
    for validator in [validators["qrels"], *run_validators, *answers]:
        validator.check_references("query_id", query_ids, "queries")
        if corpus_ids is not None:
            validator.check_references("doc_id", corpus_ids, "corpus")
    if "logs" in validators and corpus_ids is not None:
        validators["logs"].check_references("shown_doc_id", corpus_ids, "corpus")
    queries = tables["queries"]
    if "turn" in queries.columns and "session_id" in queries.columns:
        orphan = (queries["turn"].notna() & queries["session_id"].isna()).to_numpy()
        validators["queries"].report(orphan, "session_id", "a turn needs a session_id")
        sessions = queries.dropna(subset=["session_id"])
        repeated = sessions.duplicated(["session_id", "turn"]).reindex(queries.index)
        validators["queries"].report(
            repeated.fillna(False).to_numpy(dtype=bool), "turn", "duplicate turn within a session"
        )
