"""`dataset.yaml`: the per-version settings a dataset folder declares about itself.

```yaml
relevance_level: 2   # trec_eval -l: grades >= 2 are relevant (default 1)
split: dev           # BEIR folders: read qrels/<split>.tsv (default test)
language: en         # the language of questions and documents (informational)
system: logged       # the system under test: reference, callable, logged or http
http: {url: ...}     # system http: endpoint, headers, body, selectors (docs/http-system.md)
traffic_replay: true # logs.* hold one typical day: every date partition replays it on that date
traffic_every_day: false  # traffic may pause (weekends): a day without it is a note, not an alert
staged_change_days_ago: 3       # demo: the reference RAG's index, on the day 3 days before
staged_change_drop: 0.15        # today (UTC), loses the relevant documents of 15% of questions
```

`traffic_replay` and the staged change exist for the demo (a week of history on any date, with
one incident in it); a real deployment's logs carry their real timestamps.

Every key is optional; an absent file means all defaults. Unknown keys, wrong types and values
out of range are errors naming the key and its line, like any other dataset table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import pandas as pd
import yaml
from pydantic import Field, StrictBool, StrictInt, StrictStr, ValidationError, WithJsonSchema
from pydantic_core import ErrorDetails

from rag_eval_pipeline.datasets.errors import ValidationIssue
from rag_eval_pipeline.datasets.http_config import http_block_schema, http_config_problems
from rag_eval_pipeline.datasets.versions import escapes_folder
from rag_eval_pipeline.storage.config_files import ConfigModel, dotted, problem_text, shown
from rag_eval_pipeline.storage.yaml_files import load_yaml_text

MANIFEST_FILE = "dataset.yaml"
MAX_MANIFEST_BYTES = 64 * 1024
SYSTEM_KINDS = ("reference", "callable", "logged", "http")
_SPLIT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_LANGUAGE_PATTERN = r"^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$"


def utc_today() -> str:
    """Today's date in UTC (ISO), the last date partition."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


def _setting(description: str, **constraints: Any) -> Any:
    """A manifest field: `description` completes its error message (`must be <description>`)."""
    return Field(description=description, **constraints)


class DatasetManifest(ConfigModel):
    """The settings of one dataset version (defaults when `dataset.yaml` is absent); a value
    breaking its field's type or bounds is reported as `must be <the field's description>`."""

    relevance_level: StrictInt = _setting("an integer >= 1 (trec_eval -l)", default=1, ge=1)
    split: StrictStr = _setting(
        "a split name such as test, dev or train", default="test", pattern=_SPLIT_PATTERN
    )
    language: StrictStr | None = _setting(
        "a language code such as en or pt-BR", default=None, pattern=_LANGUAGE_PATTERN
    )
    system: Literal[SYSTEM_KINDS] | None = _setting(  # type: ignore[valid-type]
        f"one of {', '.join(SYSTEM_KINDS)}", default=None
    )
    traffic_replay: StrictBool = _setting("true or false", default=False)
    traffic_every_day: StrictBool = _setting("true or false", default=True)
    staged_change_days_ago: StrictInt | None = _setting(
        "a number of days from 1 to 365", default=None, ge=1, le=365
    )
    staged_change_drop: Annotated[float, Field(strict=True, gt=0, le=1)] | None = _setting(
        "a fraction of questions in (0, 1]", default=None
    )
    http: Annotated[dict[str, Any], WithJsonSchema(http_block_schema())] | None = _setting(
        "a mapping of the http system's settings (docs/http-system.md)", default=None
    )

    def to_frame(self) -> pd.DataFrame:
        """One row, stored with the version's tables by the `golden_dataset` asset."""
        row = {**self.model_dump(), "http": None if self.http is None else json.dumps(self.http)}
        return pd.DataFrame([row]).astype(
            {
                "relevance_level": "int64",
                "split": object,
                "language": object,
                "system": object,
                "traffic_replay": bool,
                "traffic_every_day": bool,
                "staged_change_days_ago": "Int64",
                "staged_change_drop": "float64",
                "http": object,
            }
        )

    @classmethod
    def from_frame(cls, frame: pd.DataFrame | None) -> DatasetManifest:
        """Inverse of `to_frame`; None (tables stored before manifests existed) is the default."""
        if frame is None or frame.empty:
            return cls()
        row = frame.iloc[0]
        known = set(cls.model_fields)
        values = {k: (None if pd.isna(v) else v) for k, v in row.items() if k in known}
        days_ago = values.get("staged_change_days_ago")
        drop = values.get("staged_change_drop")
        http = values.get("http")
        return cls(
            **{
                **values,
                "relevance_level": int(values.get("relevance_level") or 1),
                "traffic_replay": bool(values.get("traffic_replay") or False),
                "traffic_every_day": bool(values.get("traffic_every_day", True)),
                "staged_change_days_ago": None if days_ago is None else int(days_ago),
                "staged_change_drop": None if drop is None else float(drop),
                "http": None if http is None else json.loads(http),
            }
        )

    def change_active(self, day: str, today: str | None = None) -> bool:
        """True when the staged change happens on `day`: `staged_change_days_ago` before
        `today` (ISO dates; default today in UTC, so the demo's week always holds it)."""
        if self.staged_change_days_ago is None or not self.staged_change_drop:
            return False
        offset = (pd.Timestamp(today or utc_today()) - pd.Timestamp(day)).days
        return offset == self.staged_change_days_ago


def _key_lines(text: str) -> dict[str, int]:
    """1-based line of each key of a YAML mapping, nested keys as `outer.inner` (for error
    messages)."""
    return _node_key_lines(yaml.compose(text, Loader=yaml.SafeLoader), "")


def _node_key_lines(node: yaml.Node | None, prefix: str) -> dict[str, int]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    lines: dict[str, int] = {}
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode):
            name = f"{prefix}{key.value}"
            lines[name] = key.start_mark.line + 1
            lines.update(_node_key_lines(value, f"{name}."))
    return lines


def read_manifest(folder: Path) -> tuple[DatasetManifest, list[ValidationIssue]]:
    """The manifest of the version in `folder`, and every problem found in it."""
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        return DatasetManifest(), []
    if escapes_folder(folder, path):
        return DatasetManifest(), [
            ValidationIssue(MANIFEST_FILE, "is a link to a file outside the dataset folder")
        ]
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        limit = f"{MAX_MANIFEST_BYTES // 1024} KiB"
        return DatasetManifest(), [ValidationIssue(MANIFEST_FILE, f"larger than {limit}")]
    try:
        text = path.read_bytes().decode("utf-8")
        data = load_yaml_text(text, MANIFEST_FILE)
        lines = _key_lines(text)
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        problem = getattr(error, "problem", None) or "not valid UTF-8 YAML"
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        return DatasetManifest(), [
            ValidationIssue(MANIFEST_FILE, f"invalid YAML: {problem}", line=line)
        ]
    if data is None:
        return DatasetManifest(), []
    if not isinstance(data, dict):
        return DatasetManifest(), [
            ValidationIssue(MANIFEST_FILE, "must be a mapping of settings (key: value)")
        ]
    try:
        manifest = DatasetManifest.model_validate(data)
    except ValidationError as error:
        return DatasetManifest(), [_issue(problem, lines) for problem in error.errors()]
    http_issues = [
        ValidationIssue(MANIFEST_FILE, problem, column=key, line=lines.get(key, lines.get("http")))
        for key, problem in (
            http_config_problems(manifest.http) if manifest.http is not None else []
        )
    ]
    return (DatasetManifest(), http_issues) if http_issues else (manifest, [])


def _issue(problem: ErrorDetails, lines: Mapping[str, int]) -> ValidationIssue:
    """One problem of `dataset.yaml` as an issue naming its key and line: an unknown key by the
    configuration files' rule (`storage.config_files.describe`), a bad value as `must be <the
    field's description>, got <value>`."""
    key = dotted(tuple(problem["loc"]))
    line = lines.get(key)
    if problem["type"] == "extra_forbidden":
        return ValidationIssue(MANIFEST_FILE, problem_text(DatasetManifest, problem), line=line)
    name = str(problem["loc"][0])
    expected = DatasetManifest.model_fields[name].description
    got = shown(problem.get("input"))
    return ValidationIssue(MANIFEST_FILE, f"must be {expected}, got {got}", column=name, line=line)
