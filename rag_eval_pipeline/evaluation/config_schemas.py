"""Every configuration file the pipeline reads, checked in one place and described as JSON Schema.

`check_configuration` reads the configured files (`config/thresholds.yaml`,
`config/composite.yaml`, `config/criteria.yaml`, or the files their environment variables name,
and `config/variants.yaml`) by the rules the assets apply (a dataset version's own
`dataset.yaml` is checked with its tables, `rag-eval validate PATH`), so `rag-eval validate` and
`rag-eval run` refuse a misspelt key before any step runs. `write_schemas` writes each file's
JSON Schema into `docs/schemas/` (`python -m rag_eval_pipeline.evaluation.config_schemas`);
editors with a YAML language server check a file against it while it is typed
(`# yaml-language-server: $schema=...`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rag_eval_pipeline.datasets.http_config import HttpSystemConfig
from rag_eval_pipeline.datasets.manifest import DatasetManifest
from rag_eval_pipeline.evaluation.comparison import VariantsFile, load_plan
from rag_eval_pipeline.evaluation.composite import COMPOSITE_FILE, CompositeFile, load_weights
from rag_eval_pipeline.evaluation.scorecard import Thresholds, ThresholdsFile
from rag_eval_pipeline.judges.criteria import CriteriaFile, criteria_file, load_criteria
from rag_eval_pipeline.settings import PROJECT_ROOT, THRESHOLDS_FILE
from rag_eval_pipeline.storage.config_files import ConfigModel

SCHEMAS_DIR = PROJECT_ROOT / "docs" / "schemas"
MODELS: dict[str, type[ConfigModel]] = {
    "thresholds.yaml": ThresholdsFile,
    "composite.yaml": CompositeFile,
    "criteria.yaml": CriteriaFile,
    "variants.yaml": VariantsFile,
    "dataset.yaml": DatasetManifest,
    "http.yaml": HttpSystemConfig,  # the file RAG_EVAL_SYSTEM_HTTP names, or dataset.yaml's http
}
VARIANTS_FILE = PROJECT_ROOT / "config" / "variants.yaml"


def check_configuration() -> None:
    """Read every configured file; the first problem raises `ValueError` (one line naming the
    file, the key and the value)."""
    Thresholds.load(Path(THRESHOLDS_FILE))
    load_weights(COMPOSITE_FILE)
    load_criteria(criteria_file())
    load_plan(VARIANTS_FILE)


def schema_texts() -> dict[str, str]:
    """File name of each schema (`thresholds.schema.json`, ...) → its JSON text."""
    return {
        name.replace(".yaml", ".schema.json"): json.dumps(
            {"$schema": "https://json-schema.org/draft/2020-12/schema"}
            | model.model_json_schema()
            | {"title": name},
            indent=2,
            sort_keys=True,
        )
        + "\n"
        for name, model in MODELS.items()
    }


def write_schemas(folder: Path = SCHEMAS_DIR) -> list[Path]:
    """Write every schema into `folder`; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in schema_texts().items():
        (folder / name).write_text(text, encoding="utf-8")
        written.append(folder / name)
    return written


if __name__ == "__main__":
    for path in write_schemas(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMAS_DIR):
        print(path)
