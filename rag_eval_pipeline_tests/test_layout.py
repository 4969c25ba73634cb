"""The layout rules: the import-linter contracts in `pyproject.toml` hold and bite, and, at run
time, the library loads no Dagster module.

The contracts (layers from `cli` down to `metrics`/`settings`/`text`, every top-level module in
a layer; the Dagster layer's folders: `outcome`, the tiers, `shared`, `runs`; the verdict
engine's steps, each below the next; the library never importing Dagster; no import cycle between
sibling modules) read the source's import statements. The run-time check adds what they cannot
see: an import made with `importlib`, or Dagster loaded through a third-party package.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

PROJECT_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = PROJECT_ROOT / "rag_eval_pipeline"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
LIBRARY_PACKAGES = (
    "datasets",
    "embedding",
    "evaluation",
    "judges",
    "llm",
    "metrics",
    "reporting",
    "storage",
    "systems",
    "text",
)


def lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` run on the package and contracts in `project`, without a cache."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=project,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(project)},
    )


def test_the_import_contracts_hold() -> None:
    linted = lint_imports(PROJECT_ROOT)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "Contracts: 5 kept, 0 broken." in linted.stdout, linted.stdout


def test_the_import_contracts_catch_an_upward_import_dagster_and_a_cycle(tmp_path: Path) -> None:
    shutil.copytree(PACKAGE, tmp_path / "rag_eval_pipeline", ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path)
    broken = {
        "metrics/__init__.py": "import dagster\n",
        "llm/__init__.py": "from rag_eval_pipeline.reporting import html_report\n",
        "systems/answers.py": "from rag_eval_pipeline.systems import rag\n",
        "evaluation/verdicts/wording.py": "from . import decide\n",
        "defs/runs/pools.py": "from rag_eval_pipeline.defs.shared import partitions\n",
    }
    for module, line in broken.items():
        with (tmp_path / "rag_eval_pipeline" / module).open("a", encoding="utf-8") as file:
            file.write(line)
    (tmp_path / "rag_eval_pipeline" / "stray.py").write_text('"""In no layer."""\n')
    linted = lint_imports(tmp_path)
    assert linted.returncode == 1
    assert "Contracts: 0 kept, 5 broken." in linted.stdout, linted.stdout
    for expected in (
        "rag_eval_pipeline.metrics -> dagster",
        "rag_eval_pipeline.llm -> rag_eval_pipeline.reporting.html_report",
        "No cycles are allowed in rag_eval_pipeline.systems.",
        "- .answers -> .rag",
        "rag_eval_pipeline.stray",
        "rag_eval_pipeline.evaluation.verdicts.wording -> "
        "rag_eval_pipeline.evaluation.verdicts.decide",
        "rag_eval_pipeline.defs.runs.pools -> rag_eval_pipeline.defs.shared.partitions",
    ):
        assert expected in " ".join(linted.stdout.split()), (expected, linted.stdout)


def library_modules() -> list[str]:
    modules = []
    for package in LIBRARY_PACKAGES:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            modules.append(".".join(p for p in parts if p != "__init__"))
    return modules


def loaded_by(modules: list[str], package: str) -> list[str]:
    """The modules of `package` that importing `modules` in a fresh interpreter loads."""
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"prefix = {package + '.'!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if (m + '.').startswith(prefix))))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=PACKAGE.parent,
        check=True,
    )
    return json.loads(completed.stdout.splitlines()[-1])


def test_library_loads_no_dagster_at_run_time() -> None:
    modules = library_modules()
    assert len(modules) > 30
    assert loaded_by(modules, "dagster") == []
