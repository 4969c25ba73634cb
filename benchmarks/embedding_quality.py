"""Benchmark Tier 0 `cluster_quality` against scikit-learn's cosine silhouette.

Synthetic corpus: 100,000 × 384 float32 embeddings in 50 Gaussian clusters. Each method runs
in its own forked process, timed with ``time.perf_counter``; memory is the tracemalloc peak
(NumPy buffers allocated during the call) and the growth of the process's max RSS during the
call. scikit-learn scores the same 20,000-row sample `cluster_quality` uses for its silhouette,
with ``sklearn.set_config(working_memory=256)``.

Run: ``.venv/bin/python benchmarks/embedding_quality.py``
"""

from __future__ import annotations

import multiprocessing
import resource
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
import sklearn
from sklearn.metrics import silhouette_score

from rag_eval_pipeline.metrics.embedding import cluster_quality

N_ITEMS = 100_000
DIM = 384
N_CLUSTERS = 50
SAMPLE_SIZE = 20_000
SEED = 0


def make_corpus() -> tuple[np.ndarray, np.ndarray]:
    """Float32 embeddings around 50 random unit centres (noise σ = 0.05 per dimension)."""
    rng = np.random.default_rng(SEED)
    centres = rng.standard_normal((N_CLUSTERS, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    labels = rng.integers(0, N_CLUSTERS, size=N_ITEMS)
    embeddings = centres[labels]
    embeddings += rng.standard_normal((N_ITEMS, DIM), dtype=np.float32) * np.float32(0.05)
    return embeddings, labels


def _measure(run: Callable[[], float], queue: multiprocessing.Queue) -> None:
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    start = time.perf_counter()
    value = run()
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_delta = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    queue.put((value, seconds, peak / 2**20, rss_delta / 2**10))


def measure(run: Callable[[], float]) -> tuple[float, float, float, float]:
    """(silhouette, seconds, tracemalloc peak MiB, max-RSS growth MiB) of ``run`` in a fork."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_measure, args=(run, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def main() -> None:
    embeddings, labels = make_corpus()
    rows = np.random.default_rng(SEED).choice(N_ITEMS, size=SAMPLE_SIZE, replace=False)
    sample, sample_labels = embeddings[rows], labels[rows]
    sklearn.set_config(working_memory=256)

    runs = {
        "cluster_quality (all stats, silhouette on 20k sample)": lambda: cluster_quality(
            embeddings, labels, silhouette_sample_size=SAMPLE_SIZE, seed=SEED
        )["silhouette_score"],
        "sklearn silhouette_score (20k sample, cosine)": lambda: silhouette_score(
            sample, sample_labels, metric="cosine"
        ),
        "cluster_quality (all stats, exact silhouette on 100k)": lambda: cluster_quality(
            embeddings, labels, silhouette_sample_size=None
        )["silhouette_score"],
    }
    results = {name: measure(run) for name, run in runs.items()}

    input_mib = embeddings.nbytes / 2**20
    print(f"{N_ITEMS:,} × {DIM} float32, {N_CLUSTERS} clusters; input array {input_mib:.0f} MiB")
    header = (
        f"{'method':<56}{'silhouette':>12}{'time s':>9}{'tracemalloc MiB':>17}{'ΔmaxRSS MiB':>13}"
    )
    print(header)
    print("-" * len(header))
    for name, (value, seconds, peak, rss) in results.items():
        print(f"{name:<56}{value:>12.6f}{seconds:>9.2f}{peak:>17.1f}{rss:>13.1f}")
    ours = results["cluster_quality (all stats, silhouette on 20k sample)"]
    theirs = results["sklearn silhouette_score (20k sample, cosine)"]
    print(
        f"\nsklearn / cluster_quality (20k sample): time ×{theirs[1] / ours[1]:.1f}, "
        f"tracemalloc peak ×{theirs[2] / ours[2]:.1f}, "
        f"ΔmaxRSS ×{theirs[3] / max(ours[3], 1e-9):.1f}; "
        f"|silhouette difference| = {abs(theirs[0] - ours[0]):.2e}"
    )


if __name__ == "__main__":
    main()
