"""`rag-eval validate PATH`: the rule `rag-eval run` and the sensor apply to a dataset folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval_pipeline.cli.common import configuration_problem
from rag_eval_pipeline.datasets.golden import DatasetLimits
from rag_eval_pipeline.datasets.location import DatasetLocation
from rag_eval_pipeline.datasets.validity import located_verdict, version_verdict
from rag_eval_pipeline.settings import (
    DATASETS_MIRROR,
    MAX_FILE_MB,
    MAX_TEXT_CHARS,
)
from rag_eval_pipeline.storage.objects import is_local, storage_path
from rag_eval_pipeline.text.escaping import terminal_text

if TYPE_CHECKING:
    pass


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate a dataset version folder (the rule `rag-eval run` and the sensor apply) and
    print its table sizes, or the line `rag-eval run` prints for it and every problem; a
    problem of the configuration files is printed first and fails it too."""
    if (problem := configuration_problem()) is not None:
        print(terminal_text(problem), file=sys.stderr)
        return 1
    limits = DatasetLimits(MAX_FILE_MB << 20, MAX_TEXT_CHARS)
    location = storage_path(args.path)
    verdict = (
        version_verdict(Path(args.path), limits)
        if is_local(location)
        else located_verdict(
            DatasetLocation(location.parent, DATASETS_MIRROR), location.name, limits
        )
    )
    if not verdict.valid:
        print(terminal_text(verdict.refusal), file=sys.stderr)
        for problem in verdict.problems if len(verdict.problems) > 1 else ():
            print(terminal_text(f"  - {problem}"), file=sys.stderr)
        return 1
    print(terminal_text(f"Dataset version '{verdict.version}' is valid:"))
    for name, value in verdict.statistics.items():
        print(terminal_text(f"  {name}: {value}"))
    settings = verdict.manifest
    system = settings.system or "from RAG_EVAL_SYSTEM"
    print(terminal_text(f"  relevance_level: {settings.relevance_level}, system: {system}"))
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    """`rag-eval validate PATH`."""
    validate = commands.add_parser("validate", help="validate a dataset version folder")
    validate.add_argument("path")
    validate.set_defaults(handler=cmd_validate)
