"""The layout rule: only `rag_eval_pipeline/defs/` (and the wiring beside it) imports Dagster.

Every module of the library packages is imported in a fresh interpreter, which must end without
`dagster` in `sys.modules`: a transitive import through another module counts too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rag_eval_pipeline"
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
)
# Beside the library and defs/: the wiring.
WIRING = {"cli", "definitions", "settings", "__init__"}


def library_modules() -> list[str]:
    modules = []
    for package in LIBRARY_PACKAGES:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            modules.append(".".join(p for p in parts if p != "__init__"))
    return modules


def test_every_package_module_is_library_defs_or_wiring() -> None:
    top_level = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }
    assert top_level <= {*LIBRARY_PACKAGES, "defs", *WIRING}, sorted(
        top_level - {*LIBRARY_PACKAGES, "defs", *WIRING}
    )


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


def test_library_never_imports_dagster() -> None:
    modules = library_modules()
    assert len(modules) > 30
    assert loaded_by(modules, "dagster") == []


def test_systems_under_test_never_import_the_judges() -> None:
    """The generators and RAG systems are what is judged: they stand without the judge package."""
    systems = [m for m in library_modules() if m.startswith("rag_eval_pipeline.systems.")]
    assert "rag_eval_pipeline.systems.generators" in systems
    assert loaded_by(systems, "rag_eval_pipeline.judges") == []
