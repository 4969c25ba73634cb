"""How the hints `rag-eval` prints name the commands, so each one runs as printed: `rag-eval`
only when the PATH finds this installation's script (an activated venv), else its path."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from rag_eval_pipeline.settings import PROJECT_ROOT


def _shown_path(path: Path) -> str:
    """`path` relative to the working directory when it is under it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def rag_eval_command() -> str:
    """How to call `rag-eval` from this shell, as the hints print it: `rag-eval` when the PATH
    finds this installation's script (an activated venv), else that script's path
    (`.venv/bin/rag-eval`), else `python -m rag_eval_pipeline.cli` with this interpreter."""
    script = Path(sys.executable).with_name("rag-eval")
    found = shutil.which("rag-eval")
    if found and script.exists() and Path(found).resolve() == script.resolve():
        return "rag-eval"
    if script.exists():
        return _shown_path(script)
    return f"{_shown_path(Path(sys.executable))} -m rag_eval_pipeline.cli"


def make_ui_command() -> str:
    """`make ui`, with `-C <project>` when the working directory is not the project's."""
    if Path.cwd().resolve() == PROJECT_ROOT.resolve():
        return "make ui"
    return f"make -C {PROJECT_ROOT} ui"
