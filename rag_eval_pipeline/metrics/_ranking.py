"""Vectorized trec_eval ranking for the Tier 1 IR-metric kernel.

Turns a qrels table and a run table into integer arrays: for every query with at least one
relevant judgment, which judged documents (any grade) the run retrieved and at which rank.
Nothing here knows about individual metrics; :mod:`rag_eval_pipeline.metrics.retrieval`
computes those.

Ranking follows trec_eval 9.0.8 (``form_res_rels.c``): a score is stored as a C ``float``
(float32), documents are ordered by score descending, and documents with equal float32 scores
are ordered by ``strcmp`` of their ids, descending. A ``rank`` column in the run is ignored.
``strcmp`` on UTF-8 bytes orders strings as Python's code-point comparison does.

Speed comes from touching each run row's strings as little as possible:

* Every metric needs only the ranks of *relevant* retrieved documents, so the run is never
  arg-sorted. Each row gets one 64-bit order key (query code in the high 32 bits, a descending
  float32 score key in the low 32 bits); after one plain sort of those keys, a relevant row's
  rank is the number of keys of its query sorting before its own, found by binary search. Only
  rows that share their (query, score) with others compare document ids, as strings.
* Query ids are looked up once per stretch of equal adjacent ids (a run lists each query's
  documents together), found by an exact vectorized comparison with the previous row.
* Document ids are never hashed into a table (the slowest step at 10M rows). Each (query,
  doc id) pair gets a 64-bit fingerprint computed arithmetically from the query code and the
  id's UTF-8 bytes, read 8 at a time straight from the Arrow string buffer, in cache-sized
  blocks of rows. Equal pairs always have equal fingerprints, so fingerprints can only raise
  false alarms: duplicate detection and the run-to-qrels join use them to find candidates,
  then confirm every candidate by comparing the real strings. Results are therefore exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Judgments", "RankedHits", "id_strings", "load_judgments", "rank_judged_hits"]

_ARROW_STRING = pd.StringDtype("pyarrow")
_QUERY_SHIFT = np.uint64(32)
_SIGN_BIT = np.uint32(0x8000_0000)
_MIX_1 = np.uint64(0xFF51_AFD7_ED55_8CCD)
_MIX_2 = np.uint64(0xC4CE_B9FE_1A85_EC53)
_GOLDEN = np.uint64(0x9E37_79B9_7F4A_7C15)
_WORD_BYTES = 8
_LOW_BYTES_MASK = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [2**64 - 1], np.uint64)
_BLOCK_ROWS = 1 << 14  # per-row work runs in blocks whose temporaries stay in cache
_FILTER_BITS_PER_KEY = 16  # about 1 false positive per 16 tested keys
_MAX_FILTER_BITS = 23  # a 1 MiB bitmap, small enough to stay in cache
_BYTE_BITS = np.uint64(3)
_BIT_IN_BYTE = np.uint64(7)


@dataclass(frozen=True)
class Judgments:
    """Every judgment of the queries that have at least one relevant one.

    A judgment is relevant when its grade is ≥ ``relevance_level`` (trec_eval ``-l``); every
    grade is kept: trec_eval's ``ndcg_cut`` gains the grade of any judged document with a
    grade above 0, relevant or not, and ``judged@k`` counts judged documents of any grade.

    ``query_ids`` holds those queries sorted; array entries refer to them by position (code).
    The per-judgment arrays are sorted by query code, then grade descending, so they also list
    each query's ideal ranking.
    """

    query_ids: pd.Index
    query: np.ndarray
    doc_id: pd.Series
    grade: np.ndarray
    relevance_level: int = 1

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    def num_relevant(self) -> np.ndarray:
        """Number of relevant judgments per query (trec_eval ``num_rel``)."""
        relevant = self.grade >= self.relevance_level
        return np.bincount(self.query[relevant], minlength=self.num_queries)

    def restrict(self, codes: np.ndarray) -> Judgments:
        """The judgments of the queries ``codes`` (sorted, unique), renumbered from 0."""
        start = np.searchsorted(self.query, codes, side="left")
        count = np.searchsorted(self.query, codes, side="right") - start
        rows = np.repeat(start, count) + _position_in_group(count)
        return Judgments(
            query_ids=self.query_ids[codes],
            query=np.repeat(np.arange(len(codes)), count),
            doc_id=self.doc_id.iloc[rows].reset_index(drop=True),
            grade=self.grade[rows],
            relevance_level=self.relevance_level,
        )


@dataclass(frozen=True)
class RankedHits:
    """Documents at 0-based ranks, sorted by (query code, rank), with their grades."""

    query: np.ndarray
    rank: np.ndarray
    grade: np.ndarray

    def where(self, mask: np.ndarray) -> RankedHits:
        """The entries selected by ``mask`` (order kept)."""
        return RankedHits(query=self.query[mask], rank=self.rank[mask], grade=self.grade[mask])


def load_judgments(qrels: pd.DataFrame, relevance_level: int = 1) -> Judgments:
    """Validate ``qrels`` and keep the judgments of queries with a relevant one.

    A grade ≥ ``relevance_level`` (an integer ≥ 1, trec_eval ``-l``) is relevant; lower grades
    (0, negative: trec_eval reads those as judged non-relevant) are not. Raises ``ValueError``
    for a level below 1, missing columns or ids and for repeated (query_id, doc_id) pairs,
    which trec_eval rejects too.
    """
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int | np.integer):
        raise ValueError(f"relevance_level must be an integer, got {relevance_level!r}")
    if relevance_level < 1:
        raise ValueError(
            f"relevance_level must be at least 1 (trec_eval -l), got {relevance_level}"
        )
    _require_columns(qrels, ("query_id", "doc_id", "relevance"), "qrels")
    query_codes, query_ids = pd.factorize(id_strings(qrels["query_id"]), sort=True)
    _require_present(query_codes, "qrels", "query_id")
    doc_id = id_strings(qrels["doc_id"])
    grade = qrels["relevance"].to_numpy(dtype=np.int64)
    _raise_if_repeated(query_codes, doc_id, query_ids, "qrels")

    scored_queries = np.zeros(len(query_ids), dtype=bool)
    scored_queries[query_codes[grade >= relevance_level]] = True
    kept = np.flatnonzero(scored_queries[query_codes])
    kept_queries, query = np.unique(query_codes[kept], return_inverse=True)
    by_query_then_grade = np.lexsort((-grade[kept], query))
    order = kept[by_query_then_grade]
    return Judgments(
        query_ids=query_ids[kept_queries],
        query=query[by_query_then_grade],
        doc_id=doc_id.iloc[order].reset_index(drop=True),
        grade=grade[order],
        relevance_level=int(relevance_level),
    )


def rank_judged_hits(run: pd.DataFrame, judgments: Judgments) -> RankedHits:
    """Find the judged documents ``run`` retrieved and their trec_eval ranks.

    Rows of queries outside ``judgments`` are ignored. Raises ``ValueError`` for missing
    columns or ids, NaN scores and repeated (query_id, doc_id) pairs, which trec_eval rejects.
    """
    _require_columns(run, ("query_id", "doc_id", "score"), "run")
    query = _query_codes(id_strings(run["query_id"]), judgments.query_ids)
    doc_id = id_strings(run["doc_id"])
    score = run["score"].to_numpy(dtype=np.float64)
    if np.isnan(score).any():
        raise ValueError("run has NaN scores, which have no trec_eval order")
    evaluated = query >= 0
    if not evaluated.all():
        query, score = query[evaluated], score[evaluated]
        doc_id = doc_id[evaluated].reset_index(drop=True)

    judged_pairs = _pair_fingerprints(judgments.query, judgments.doc_id, "qrels")
    keys = _row_keys(query, score, doc_id, _KeyFilter(judged_pairs))
    _raise_if_pairs_repeat(keys.pair, query, doc_id, judgments.query_ids)
    rows, grade = _judged_rows(keys, query, doc_id, judgments, judged_pairs)
    rank = _trec_ranks(keys.order, query, rows, doc_id)
    order = np.lexsort((rank, query[rows]))
    return RankedHits(query=query[rows][order], rank=rank[order], grade=grade[order])


def _require_columns(frame: pd.DataFrame, columns: tuple[str, ...], table: str) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{table} is missing column(s) {missing}")


def _require_present(codes: np.ndarray, table: str, column: str) -> None:
    if (codes < 0).any():
        raise ValueError(f"{table} has missing values in {column!r}")


def id_strings(ids: pd.Series) -> pd.Series:
    """Ids as Arrow-backed strings (trec_eval ids are strings; e.g. integers are converted)."""
    if isinstance(ids.dtype, pd.StringDtype) and ids.dtype.storage == "pyarrow":
        return ids
    return ids.astype(_ARROW_STRING)


def _query_codes(query_id: pd.Series, vocabulary: pd.Index) -> np.ndarray:
    """Position of each row's query id in ``vocabulary``, -1 where absent.

    Runs list each query's rows together, so only the first id of every stretch of equal
    adjacent ids (found by an exact Arrow comparison) is looked up.
    """
    if query_id.isna().any():
        raise ValueError("run has missing values in 'query_id'")
    ids = pa.array(query_id)
    differs_from_previous = pc.not_equal(ids[1:], ids[:-1]).to_numpy(zero_copy_only=False)
    stretch_start = np.flatnonzero(np.concatenate([[len(ids) > 0], differs_from_previous]))
    stretch_length = np.diff(np.append(stretch_start, len(ids)))
    stretch_code = vocabulary.get_indexer(query_id.iloc[stretch_start]).astype(np.int32)
    return np.repeat(stretch_code, stretch_length)


def _raise_if_repeated(
    query: np.ndarray, doc_id: pd.Series, query_ids: pd.Index, table: str
) -> None:
    """Exact check that no (query code, doc id) pair occurs twice."""
    doc_codes, _ = pd.factorize(doc_id)
    _require_present(doc_codes, table, "doc_id")
    pair_codes = query.astype(np.int64) * (int(doc_codes.max(initial=0)) + 1) + doc_codes
    repeated = np.flatnonzero(pd.Index(pair_codes).duplicated())
    if repeated.size:
        row = repeated[0]
        raise ValueError(
            f"{table} lists doc_id {doc_id.iloc[row]!r} more than once for query_id "
            f"{query_ids[query[row]]!r} (trec_eval rejects duplicate documents)"
        )


def _raise_if_pairs_repeat(
    pair: np.ndarray, query: np.ndarray, doc_id: pd.Series, query_ids: pd.Index
) -> None:
    """Duplicate check of the run: only rows whose pair fingerprints collide are compared."""
    sorted_pairs = np.sort(pair)
    collided = np.unique(sorted_pairs[1:][sorted_pairs[1:] == sorted_pairs[:-1]])
    if collided.size:
        rows = _rows_with_keys(pair, collided)
        _raise_if_repeated(query[rows], doc_id.iloc[rows], query_ids, "run")


@dataclass(frozen=True)
class _RowKeys:
    """Per run row: (query, doc id) fingerprint and trec_eval order key; judged candidates."""

    pair: np.ndarray
    order: np.ndarray
    maybe_judged: np.ndarray


class _KeyFilter:
    """Membership pre-test for uint64 keys with no false negatives and few false positives.

    A packed bitmap indexed by a multiplicative hash of the key (top bits of key x 2^64/phi).
    """

    def __init__(self, keys: np.ndarray) -> None:
        wanted_bits = np.ceil(np.log2(_FILTER_BITS_PER_KEY * len(keys) + 1))
        bits = int(np.clip(wanted_bits, 10, _MAX_FILTER_BITS))
        self._shift = np.uint64(64 - bits)
        self._bitmap = np.zeros(1 << (bits - 3), dtype=np.uint8)
        slots = self._slots(keys)
        np.bitwise_or.at(self._bitmap, slots >> _BYTE_BITS, self._bit_in_byte(slots))

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        return (keys * _GOLDEN) >> self._shift

    @staticmethod
    def _bit_in_byte(slots: np.ndarray) -> np.ndarray:
        return np.left_shift(np.uint8(1), (slots & _BIT_IN_BYTE).astype(np.uint8))

    def might_contain(self, keys: np.ndarray) -> np.ndarray:
        slots = self._slots(keys)
        return (self._bitmap[slots >> _BYTE_BITS] & self._bit_in_byte(slots)).astype(bool)


def _row_keys(
    query: np.ndarray, score: np.ndarray, doc_id: pd.Series, judged: _KeyFilter
) -> _RowKeys:
    """All per-row work in one blocked pass over the run."""
    pair = np.empty(len(query), np.uint64)
    order = np.empty(len(query), np.uint64)
    maybe_judged = np.empty(len(query), bool)
    for rows, pair_fingerprint in _pair_fingerprint_blocks(query, doc_id, "run"):
        pair[rows] = pair_fingerprint
        order[rows] = _order_keys(query[rows], score[rows])
        maybe_judged[rows] = judged.might_contain(pair[rows])
    return _RowKeys(pair=pair, order=order, maybe_judged=np.flatnonzero(maybe_judged))


def _rows_with_keys(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Indices (ascending) of the entries of ``keys`` found in the sorted array ``wanted``."""
    candidates = np.flatnonzero(_KeyFilter(wanted).might_contain(keys))
    position = np.minimum(np.searchsorted(wanted, keys[candidates]), len(wanted) - 1)
    return candidates[wanted[position] == keys[candidates]]


def _pair_fingerprints(query: np.ndarray, doc_id: pd.Series, table: str) -> np.ndarray:
    """A uint64 per (query code, doc id) pair; equal pairs get equal fingerprints."""
    fingerprints = np.empty(len(query), np.uint64)
    for rows, block in _pair_fingerprint_blocks(query, doc_id, table):
        fingerprints[rows] = block
    return fingerprints


def _pair_fingerprint_blocks(
    query: np.ndarray, doc_id: pd.Series, table: str
) -> Iterator[tuple[slice, np.ndarray]]:
    """Pair fingerprints block by block, each with the slice of rows it covers."""
    array = pa.array(doc_id)
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    chunk_start = 0
    for chunk in chunks:
        if chunk.null_count:
            raise ValueError(f"{table} has missing values in 'doc_id'")
        words_at, offsets = _string_buffers(chunk)
        for start in range(0, len(chunk), _BLOCK_ROWS):
            stop = min(start + _BLOCK_ROWS, len(chunk))
            rows = slice(chunk_start + start, chunk_start + stop)
            yield rows, _block_fingerprints(query[rows], words_at, offsets[start : stop + 1])
        chunk_start += len(chunk)


def _string_buffers(chunk: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow string array's offsets, and its bytes viewed as a uint64 at every offset."""
    chunk = chunk.cast(pa.large_string())
    _, offsets_buffer, data_buffer = chunk.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int64)[chunk.offset : chunk.offset + len(chunk) + 1]
    data = (
        np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    )
    longest = int(np.diff(offsets).max(initial=0))
    padded = np.zeros(len(data) + longest + _WORD_BYTES, np.uint8)  # no read leaves the array
    padded[: len(data)] = data
    words_at = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    return words_at, offsets


def _block_fingerprints(query: np.ndarray, words_at: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Mix each query code, doc id length and the id's 8-byte words into 64 bits.

    Bytes past the end of a string are zeroed in its last word, and words wholly past its end
    are not mixed in, so a fingerprint never depends on the other strings in the block.
    """
    starts, lengths = offsets[:-1], np.diff(offsets)
    fingerprint = query.astype(np.uint64) * _GOLDEN + lengths.astype(np.uint64) * _MIX_1
    for word_start in range(0, int(lengths.max(initial=0)), _WORD_BYTES):
        remaining = lengths - word_start
        word = words_at[starts + word_start]
        if remaining.min() < _WORD_BYTES:
            word &= _LOW_BYTES_MASK[np.clip(remaining, 0, _WORD_BYTES)]
        mixed = (fingerprint ^ word) * _MIX_2
        mixed ^= mixed >> np.uint64(29)
        fingerprint = mixed if remaining.min() > 0 else np.where(remaining > 0, mixed, fingerprint)
    return _finalize(fingerprint)


def _finalize(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer, in place: a bijection that spreads every input bit."""
    values ^= values >> np.uint64(33)
    values *= _MIX_1
    values ^= values >> np.uint64(33)
    values *= _MIX_2
    values ^= values >> np.uint64(33)
    return values


def _judged_rows(
    keys: _RowKeys,
    query: np.ndarray,
    doc_id: pd.Series,
    judgments: Judgments,
    judged_pairs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Run rows (ascending) whose (query, doc) has a judgment, and its grade.

    Candidate rows are paired with every judgment sharing their pair fingerprint (normally
    one or none), and a pair is kept only if query and doc id really match. Candidates are
    searched in fingerprint order, which keeps the binary searches cache-friendly.
    """
    by_fingerprint = np.argsort(judged_pairs)
    sorted_judged = judged_pairs[by_fingerprint]
    candidates = keys.maybe_judged[np.argsort(keys.pair[keys.maybe_judged])]
    candidate_pairs = keys.pair[candidates]
    first = np.searchsorted(sorted_judged, candidate_pairs, side="left")
    count = np.searchsorted(sorted_judged, candidate_pairs, side="right") - first
    row = np.repeat(candidates, count)
    judgment = by_fingerprint[np.repeat(first, count) + _position_in_group(count)]
    same_query = query[row] == judgments.query[judgment]
    same_doc = _equal_strings(doc_id.iloc[row], judgments.doc_id.iloc[judgment])
    match = np.flatnonzero(same_query & same_doc)
    by_row = match[np.argsort(row[match])]
    return row[by_row], judgments.grade[judgment[by_row]]


def _position_in_group(group_sizes: np.ndarray) -> np.ndarray:
    """0, 1, ..., size - 1 for each group, concatenated."""
    group_starts = np.cumsum(group_sizes) - group_sizes
    return np.arange(int(group_sizes.sum())) - np.repeat(group_starts, group_sizes)


def _equal_strings(left: pd.Series, right: pd.Series) -> np.ndarray:
    return left.to_numpy(dtype=object) == right.to_numpy(dtype=object)


def _descending_score_keys(score: np.ndarray) -> np.ndarray:
    """uint32 keys whose ascending order is descending float32 score order.

    Scores are cast to float32 as trec_eval stores them, and -0.0 becomes +0.0 because C
    compares the two as equal. For IEEE floats, the bit pattern of a non-negative value grows
    with the value and that of a negative one grows with its magnitude; flipping all but the
    sign bit of non-negative values turns this into one descending order.
    """
    with np.errstate(over="ignore"):
        as_float32 = score.astype(np.float32) + np.float32(0.0)
    bits = as_float32.view(np.uint32)
    non_negative_mask = (bits >> np.uint32(31)) - np.uint32(1)  # all ones if sign bit is 0
    return bits ^ (non_negative_mask & ~_SIGN_BIT)


def _order_keys(query: np.ndarray, score: np.ndarray) -> np.ndarray:
    """uint64 keys sorting rows by query code, then by descending float32 score."""
    return (query.astype(np.uint64) << _QUERY_SHIFT) | _descending_score_keys(score)


def _trec_ranks(
    order_key: np.ndarray, query: np.ndarray, rows: np.ndarray, doc_id: pd.Series
) -> np.ndarray:
    """0-based trec_eval rank of each of ``rows`` within its query.

    In the sorted keys each query is one segment, so the rank is the row's insertion point
    within its query's segment: a binary search over about log2(depth) steps.
    """
    sorted_keys = np.sort(order_key)
    rows_per_query = np.bincount(query)
    segment_end = np.cumsum(rows_per_query)[query[rows]]
    segment_start = segment_end - rows_per_query[query[rows]]
    keys = order_key[rows]
    before = _search_segments(sorted_keys, segment_start, segment_end, keys, strictly_less=True)
    not_after = _search_segments(sorted_keys, before, segment_end, keys, strictly_less=False)
    tie_size = not_after - before
    rank = before - segment_start
    tied = np.flatnonzero(tie_size > 1)
    if tied.size:
        rank[tied] += _tie_offsets(order_key, query, rows[tied], doc_id)
    return rank


def _search_segments(
    sorted_keys: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    keys: np.ndarray,
    strictly_less: bool,
) -> np.ndarray:
    """Vectorized ``np.searchsorted(sorted_keys[start:end], key) + start`` for each key.

    Returns the first position whose value is not below the key (``strictly_less``: counts
    values < key, like side="left") or not at or below it (values <= key, side="right").
    """
    low, high = start.copy(), end.copy()
    last = max(len(sorted_keys) - 1, 0)
    for _ in range(int(np.max(end - start, initial=0)).bit_length()):
        searching = low < high
        middle = (low + high) >> 1
        value = sorted_keys[np.minimum(middle, last)]
        below = value < keys if strictly_less else value <= keys
        low = np.where(searching & below, middle + 1, low)
        high = np.where(searching & ~below, middle, high)
    return low


def _tie_offsets(
    order_key: np.ndarray, query: np.ndarray, tied_rows: np.ndarray, doc_id: pd.Series
) -> np.ndarray:
    """For rows sharing their order key with others: how many of those have a larger doc id."""
    members = _tie_members(order_key, query, tied_rows)
    member_keys = order_key[members]
    doc_order = _string_order(doc_id.iloc[members])
    trec_order = np.lexsort((-doc_order, member_keys))
    sorted_keys = member_keys[trec_order]
    offset = np.empty(len(members), np.int64)
    offset[trec_order] = np.arange(len(members)) - np.searchsorted(sorted_keys, sorted_keys)
    return offset[np.searchsorted(members, tied_rows)]


def _tie_members(order_key: np.ndarray, query: np.ndarray, tied_rows: np.ndarray) -> np.ndarray:
    """Rows (ascending) sharing the order key of one of ``tied_rows``, sought in their queries."""
    in_tied_query = np.zeros(int(query.max()) + 1, dtype=bool)
    in_tied_query[query[tied_rows]] = True
    searched = np.flatnonzero(in_tied_query[query])
    return searched[_rows_with_keys(order_key[searched], np.unique(order_key[tied_rows]))]


def _string_order(strings: pd.Series) -> np.ndarray:
    """Rank of each string among the distinct ones, in code-point (= UTF-8 byte) order."""
    codes, _ = pd.factorize(strings.to_numpy(dtype=object), sort=True)
    return codes
