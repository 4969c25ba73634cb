"""Sentences and tokens of untrusted text, and their embeddings, within fixed bounds.

Sentences come from a Unicode-aware regex (`split_sentences`), tokens are case-folded `\\w+`
runs of any script (`word_tokens`); citation markers such as [2] are dropped from both. The
offline judge and the extractive generator read only the sentences of each text's first
`MAX_JUDGED_CHARS` (20,000) characters, at most `MAX_SENTENCES` (256) per text or per row's
context, so a 1 MB answer costs what a 20,000-character one does; `exceeds_bounds` tells when a
text was cut.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval_pipeline.datasets.values import as_chunks
from rag_eval_pipeline.metrics.bounds import MAX_JUDGED_CHARS

if TYPE_CHECKING:
    from rag_eval_pipeline.embedding.embedder import Embedder

MAX_SENTENCES = 256

# A sentence ends after . ! ? … (optionally followed by a closing quote or bracket) and
# whitespace, after a CJK full stop, or at a line break. `\s` and `\w` are Unicode-aware.
# A whitespace run is scanned only from its first character (`(?<!\s)`): starting inside the
# run would find the same match or none, so this keeps both regexes linear on long runs.
_SENTENCE_BREAK = re.compile(
    r"(?:(?<=[.!?…])|(?<=[.!?…][\"'”’»)\]]))\s+|(?<=[。！？])\s*|(?<!\s)\s*\n\s*"
)
_CITATION = re.compile(r"(?<!\s)\s*\[\d+(?:\s*[,;]\s*\d+)*\]")
_WORD = re.compile(r"\w+")


def _all_sentences(text: str) -> list[str]:
    pieces = _SENTENCE_BREAK.split(_CITATION.sub("", text))
    return [piece.strip() for piece in pieces if _WORD.search(piece)]


def split_sentences(text: str) -> list[str]:
    """Sentences of `text`, citation markers like [2] removed, pieces without a word dropped;
    only the first `MAX_SENTENCES` sentences of the first `MAX_JUDGED_CHARS` characters."""
    return _all_sentences(text[:MAX_JUDGED_CHARS])[:MAX_SENTENCES]


def exceeds_bounds(texts: Sequence[str]) -> bool:
    """Whether only part of `texts` is read (one text, or a row's chunks): a text longer than
    `MAX_JUDGED_CHARS`, or more than `MAX_SENTENCES` sentences in all."""
    if any(len(text) > MAX_JUDGED_CHARS for text in texts):
        return True
    return sum(len(_all_sentences(text)) for text in texts) > MAX_SENTENCES


def word_tokens(text: str) -> list[str]:
    """Case-folded `\\w+` tokens of any script, citation markers removed."""
    return _WORD.findall(_CITATION.sub("", text).casefold())


def chunk_sentences(chunks: Any) -> list[list[str]]:
    """Per chunk of a row (rank order), its sentences, the first `MAX_SENTENCES` of the row's
    in all: chunks past the bound get none."""
    groups, budget = [], MAX_SENTENCES
    for chunk in as_chunks(chunks):
        groups.append(split_sentences(chunk)[:budget])
        budget -= len(groups[-1])
    return groups


def context_sentences(chunks: Any) -> list[str]:
    """The sentences of a row's chunks in rank order, the first `MAX_SENTENCES` of them."""
    return list(itertools.chain.from_iterable(chunk_sentences(chunks)))


@dataclass(frozen=True)
class Sentences:
    """The sentences of one text or row: unit-length embeddings and case-folded token sets."""

    texts: list[str]
    vectors: np.ndarray
    tokens: list[frozenset[str]]

    def __len__(self) -> int:
        return len(self.texts)


def embed_sentences(embedder: Embedder, groups: Sequence[Sequence[str]]) -> list[Sentences]:
    """Embed the texts of every group in one batch; one `Sentences` per group.

    Each text is cut to its first `MAX_JUDGED_CHARS` characters before embedding: no vector
    changes for a model that reads at most a few thousand tokens (all-MiniLM-L6-v2 reads 256),
    and a megabyte is never tokenized."""
    flat = [text[:MAX_JUDGED_CHARS] for group in groups for text in group]
    vectors = np.asarray(embedder.encode(flat), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    bounds = np.cumsum([0, *(len(group) for group in groups)])
    return [
        Sentences(
            texts=list(group),
            vectors=vectors[bounds[i] : bounds[i + 1]],
            tokens=[frozenset(word_tokens(text)) for text in group],
        )
        for i, group in enumerate(groups)
    ]
