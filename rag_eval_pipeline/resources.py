"""Dagster resources: where datasets live, the embedder, the judge and generator LLMs, alerts.

Each resource is a thin, configurable wrapper around a library object, so every value can be set
in run config, the Launchpad or the environment without code changes.
"""

from functools import cache
from pathlib import Path

from dagster import ConfigurableResource

from rag_eval_pipeline.datasets.golden import GoldenDataset, load_dataset
from rag_eval_pipeline.datasets.versions import VersionScan, scan_versions, version_dir
from rag_eval_pipeline.embedding.embedder import DEFAULT_MODEL, Embedder
from rag_eval_pipeline.settings import CACHE_DIR, DATASETS_DIR


class DatasetsResource(ConfigurableResource):
    """The folder holding one sub-folder per dataset version."""

    root: str = str(DATASETS_DIR)

    def scan(self) -> VersionScan:
        """Valid version folders and the reasons others were rejected."""
        return scan_versions(Path(self.root))

    def load(self, version: str) -> GoldenDataset:
        """Read and validate one version (raises `DatasetError` naming file, row, column)."""
        return load_dataset(version_dir(Path(self.root), version), version)


@cache
def _shared_embedder(model: str, cache_dir: str, batch_size: int, normalize: bool) -> Embedder:
    return Embedder(
        model=model, cache_dir=Path(cache_dir), batch_size=batch_size, normalize=normalize
    )


class EmbedderResource(ConfigurableResource):
    """A sentence-transformers model (default: the packaged all-MiniLM-L6-v2) with a disk cache."""

    model: str = DEFAULT_MODEL
    cache_dir: str = str(CACHE_DIR / "embeddings")
    batch_size: int = 64
    normalize: bool = True

    def get(self) -> Embedder:
        """The process-wide embedder for this configuration (the model loads once)."""
        return _shared_embedder(self.model, self.cache_dir, self.batch_size, self.normalize)
