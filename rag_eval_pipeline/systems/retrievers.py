"""The reference retrievers: dense (cosine over embeddings), BM25, and their rank fusion.

All three score every query against the whole corpus in one matrix product and return a run
table (`system, query_id, doc_id, rank, score`) that the IR metrics consume directly.

Why these three: dense retrieval with the evaluation embedder is what most RAG stacks ship;
BM25 is the lexical baseline every IR paper reports and catches exact terms (error codes,
product names) that small embedders miss; reciprocal-rank fusion of the two (Cormack et al.,
SIGIR 2009, k = 60) is the standard hybrid that needs no score calibration.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

RUN_COLUMNS = ["system", "query_id", "doc_id", "rank", "score"]
# The retrievers' names: Tier 1's reference runs and the reference RAG's `retriever` option.
DENSE, BM25, HYBRID = "dense", "bm25", "hybrid-rrf"
RETRIEVERS = (DENSE, BM25, HYBRID)
TOKEN_PATTERN = re.compile(r"(?u)\b\w+\b")
RRF_K = 60


def document_texts(corpus: pd.DataFrame) -> list[str]:
    """The text each retriever indexes: `title. text` when a title exists, else `text`."""
    if "title" not in corpus.columns:
        return corpus["text"].tolist()
    titles = corpus["title"].fillna("").str.strip()
    return [f"{t}. {x}" if t else x for t, x in zip(titles, corpus["text"], strict=True)]


def top_k_run(
    scores: np.ndarray, query_ids: Sequence[str], doc_ids: Sequence[str], k: int, system: str
) -> pd.DataFrame:
    """Turn a (queries × docs) score matrix into a run of the `k` best docs per query.

    Ties in score are ordered by doc id descending, the order trec_eval evaluates them in.
    """
    n_queries, n_docs = scores.shape
    k = min(k, n_docs)
    if n_queries == 0 or k == 0:
        return pd.DataFrame(columns=RUN_COLUMNS)
    docs = np.asarray(doc_ids, dtype=object)
    doc_rank_desc = np.argsort(np.argsort(docs)[::-1])
    order = np.lexsort((np.broadcast_to(doc_rank_desc, scores.shape), -scores), axis=1)[:, :k]
    top_scores = np.take_along_axis(scores, order, axis=1)
    return pd.DataFrame(
        {
            "system": system,
            "query_id": np.repeat(np.asarray(query_ids, dtype=object), k),
            "doc_id": docs[order.ravel()],
            "rank": np.tile(np.arange(1, k + 1), n_queries),
            "score": top_scores.ravel().astype(np.float64),
        }
    )


def dense_scores(query_vectors: np.ndarray, doc_vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of every query with every document (rows L2-normalized first)."""

    def unit(matrix: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)

    return unit(query_vectors) @ unit(doc_vectors).T


def tokenize(text: str) -> list[str]:
    """Lower-cased Unicode words, as scikit-learn's `CountVectorizer` splits them by default."""
    return TOKEN_PATTERN.findall(text.lower())


def _term_pairs(
    token_lists: Sequence[Sequence[str]], vocabulary: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, term id, count) of every distinct in-vocabulary term per row, sorted by row, term."""
    ids = [[vocabulary[t] for t in tokens if t in vocabulary] for tokens in token_lists]
    rows = np.repeat(np.arange(len(ids)), [len(row) for row in ids])
    terms = np.fromiter((t for row in ids for t in row), dtype=np.int64, count=len(rows))
    width = max(len(vocabulary), 1)
    keys, counts = np.unique(rows * width + terms, return_counts=True)
    row_of, term_of = np.divmod(keys, width)
    return row_of, term_of, counts


def bm25_scores(
    questions: Sequence[str], documents: Sequence[str], k1: float = 1.2, b: float = 0.75
) -> np.ndarray:
    """Okapi BM25 of every question against every document (Robertson & Zaragoza, 2009).

    Tokens are lower-cased Unicode words (`tokenize`); idf = ln(1 + (N − df + 0.5) / (df + 0.5))
    (the non-negative Lucene variant); a query term repeated q times counts q times; terms not in
    any document score nothing. The sum over a query's terms runs in vocabulary order, so the
    scores equal, bit for bit, a scikit-learn `CountVectorizer` and SciPy sparse product of the
    same formula (tested), without importing either (seconds per process).
    """
    doc_tokens = [tokenize(text) for text in documents]
    vocabulary = {t: i for i, t in enumerate(sorted({t for tokens in doc_tokens for t in tokens}))}
    n_docs, n_queries = len(documents), len(questions)
    post_doc, post_term, tf_counts = _term_pairs(doc_tokens, vocabulary)
    order = np.lexsort((post_doc, post_term))
    post_doc, post_term, tf = post_doc[order], post_term[order], tf_counts[order].astype(np.float64)
    doc_freq = np.bincount(post_term, minlength=len(vocabulary))
    idf = np.log1p((n_docs - doc_freq + 0.5) / (doc_freq + 0.5))
    lengths = np.bincount(post_doc, weights=tf, minlength=n_docs)
    norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-9)) if n_docs else lengths
    weights = idf[post_term] * tf * (k1 + 1) / (tf + norm[post_doc])
    starts = np.searchsorted(post_term, np.arange(len(vocabulary) + 1))

    query_of, term_of, query_counts = _term_pairs([tokenize(q) for q in questions], vocabulary)
    postings = starts[term_of + 1] - starts[term_of]
    pair = np.repeat(np.arange(len(term_of)), postings)
    offset = np.arange(len(pair)) - np.repeat(np.cumsum(postings) - postings, postings)
    position = starts[term_of][pair] + offset
    flat = np.bincount(
        query_of[pair] * n_docs + post_doc[position],
        weights=query_counts[pair] * weights[position],
        minlength=n_queries * n_docs,
    )
    return flat.reshape(n_queries, n_docs)


def reciprocal_rank_fusion(*runs: pd.DataFrame, system: str, k: int) -> pd.DataFrame:
    """Fuse runs by Σ 1 / (RRF_K + rank) per (query, doc); keep the `k` best per query."""
    stacked = pd.concat(runs, ignore_index=True)
    stacked["fused"] = 1.0 / (RRF_K + stacked["rank"])
    fused = stacked.groupby(["query_id", "doc_id"], as_index=False, sort=False)["fused"].sum()
    fused = fused.sort_values(
        ["query_id", "fused", "doc_id"], ascending=[True, False, False], kind="stable"
    )
    fused["rank"] = fused.groupby("query_id").cumcount() + 1
    fused = fused[fused["rank"] <= k].rename(columns={"fused": "score"})
    return fused.assign(system=system)[RUN_COLUMNS].reset_index(drop=True)
