"""Session-wide fixtures: the offline environment and one embedding model per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag_eval_pipeline.embedding.embedder import Embedder  # noqa: E402

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DATASETS_DIR = PROJECT_ROOT / "data" / "datasets"


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """The packaged all-MiniLM-L6-v2, loaded once, caching into a session temp folder."""
    return Embedder(cache_dir=tmp_path_factory.mktemp("embedding-cache"))
