"""A `traces/` folder's spans grouped by trace in bounded memory: spilled to buckets, then
grouped bucket by bucket.

One pass reads the trace files in their sorted order; each file's reduced spans (`Span`) are
written, as they are read, to one of `BUCKETS` bucket files of that file (its `SpannedFile`)
by a hash of their trace id (BLAKE2b, 64 bits: the bucket is the hash modulo `BUCKETS`), so
every span of a trace, in whatever file it was exported, lands in the same bucket number.
Then bucket number b of every file, files in their order and spans in their order, is read
and grouped by trace: a span exported twice is kept once (the first read, hence the first
file's copy, wins), and each trace carries the position of its first span
(file index, span index), the order in which the whole folder first met it. A bucket whose
spilled bytes exceed `MAX_BUCKET_BYTES` is split again, by the next bits of the same hash,
into as many sub-buckets as keep each under it (the fixed `BUCKETS` per file lets a file's
buckets be stored once and reused, `span_store`). Memory holds one (sub-)bucket's spans.

The users' feedback annotations (Phoenix span annotations: a span id and a value) are kept in
memory, the first per span id winning: one small entry per rated span.

Spill format: each bucket file is a sequence of pickled lists of up to `FLUSH_SPANS` (position
in the file, `Span` field tuple) pairs (so at most 64 × 128 spans wait in memory), our own
temporary data read back by the same code version (the store's key names the version).
"""

from __future__ import annotations

import hashlib
import math
import pickle
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Protocol

from rag_eval_pipeline.datasets.errors import DatasetError, ValidationIssue
from rag_eval_pipeline.datasets.traces.conventions import FileProblems, Span
from rag_eval_pipeline.datasets.traces.detect import Reader
from rag_eval_pipeline.datasets.traces.phoenix import Feedback

BUCKETS = 64
MAX_BUCKET_BYTES = 64 * 2**20
FLUSH_SPANS = 128
PROTOCOL = pickle.HIGHEST_PROTOCOL
SPILL_FORMAT = 2
SPAN_NAMES = tuple(f.name for f in fields(Span))

Window = tuple[int, int]
Seen = tuple[int, int]
"""Where a trace's first span was read: the file's index and the span's index in the file."""
TraceFile = tuple[Path, str, Reader]


def trace_hash(trace_id: str) -> int:
    """The 64-bit hash a trace's spans are bucketed by."""
    return int.from_bytes(hashlib.blake2b(trace_id.encode(), digest_size=8).digest(), "little")


@dataclass
class SpannedFile:
    """One trace file's spans, spilled to `BUCKETS` files in `folder` (`NN.spans`), and its
    feedback annotations; `sizes`: the bytes of each bucket file (0: none written)."""

    folder: Path
    feedback: dict[str, str] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=lambda: [0] * BUCKETS)

    def bucket_path(self, bucket: int) -> Path:
        return self.folder / f"{bucket:02d}.spans"

    def spans(self, bucket: int) -> Iterator[tuple[int, Span]]:
        """The spans of `bucket` with their positions in the file, in the order read."""
        if not self.sizes[bucket]:
            return
        for batch in pickled(self.bucket_path(bucket)):
            for position, values in batch:
                yield position, Span(*values)


def pickled(path: Path) -> Iterator:
    """The objects pickled one after the other into the file at `path`."""
    with open(path, "rb") as handle:
        while True:
            try:
                yield pickle.load(handle)
            except EOFError:
                return


def spill_file(
    path: Path, label: str, reader: Reader, folder: Path, window: Window | None = None
) -> SpannedFile:
    """Read the trace file at `path` and spill its spans (with `window`, UTC nanoseconds
    [start, end): only those starting in it) to `folder`; its problems raise (`DatasetError`,
    every problem of the file as its reader reports them)."""
    folder.mkdir(parents=True, exist_ok=True)
    spilled = SpannedFile(folder)
    buffers: list[list[tuple[int, tuple]]] = [[] for _ in range(BUCKETS)]
    for position, record in enumerate(reader(path, label)):
        if isinstance(record, Feedback):
            spilled.feedback.setdefault(record.span_id, record.value)
        elif window is None or window[0] <= record.start_ns < window[1]:
            bucket = trace_hash(record.trace_id) % BUCKETS
            buffers[bucket].append((position, span_fields(record)))
            if len(buffers[bucket]) >= FLUSH_SPANS:
                _flush(spilled, bucket, buffers[bucket])
    for bucket, buffer in enumerate(buffers):
        _flush(spilled, bucket, buffer)
    return spilled


def span_fields(span: Span) -> tuple:
    """A span's fields as a tuple (not copied: `dataclasses.astuple` copies deeply)."""
    return tuple(getattr(span, name) for name in SPAN_NAMES)


def _flush(spilled: SpannedFile, bucket: int, buffer: list[tuple[int, tuple]]) -> None:
    """Append the buffered spans to the bucket's file, as one pickled list."""
    if buffer:
        data = pickle.dumps(buffer, PROTOCOL)
        with open(spilled.bucket_path(bucket), "ab") as handle:
            handle.write(data)
        spilled.sizes[bucket] += len(data)
        buffer.clear()


@dataclass
class SpilledTraces:
    """Every trace file's spilled spans, in the files' order, and the feedback annotations."""

    files: list[SpannedFile]
    feedback: dict[str, str]
    scratch: Path

    def traces(self) -> Iterator[list[tuple[Seen, dict[str, Span]]]]:
        """Bucket by bucket, its traces: where each was first met and its spans by span id (a
        span exported twice kept once: the first read), in the order first met."""
        for bucket in range(BUCKETS):
            size = sum(f.sizes[bucket] for f in self.files)
            if not size:
                continue
            parts = math.ceil(size / MAX_BUCKET_BYTES)
            if parts == 1:
                yield _grouped(self._seen_spans(bucket))
            else:
                yield from map(_grouped, self._split(bucket, parts))

    def _seen_spans(self, bucket: int) -> Iterator[tuple[Seen, Span]]:
        for index, spilled in enumerate(self.files):
            for position, span in spilled.spans(bucket):
                yield (index, position), span

    def _split(self, bucket: int, parts: int) -> Iterator[Iterator[tuple[Seen, Span]]]:
        """The spans of a bucket over `MAX_BUCKET_BYTES`, in `parts` sub-buckets (the next
        bits of the trace hash), each spilled to the scratch folder then read back."""
        with tempfile.TemporaryDirectory(dir=self.scratch) as work:
            with ExitStack() as files:
                handles = [
                    files.enter_context(open(Path(work) / f"{part}.spans", "wb"))
                    for part in range(parts)
                ]
                for seen, span in self._seen_spans(bucket):
                    part = (trace_hash(span.trace_id) // BUCKETS) % parts
                    pickle.dump((seen, span_fields(span)), handles[part], PROTOCOL)
            for part in range(parts):
                yield (
                    (seen, Span(*values)) for seen, values in pickled(Path(work) / f"{part}.spans")
                )


def _grouped(spans: Iterator[tuple[Seen, Span]]) -> list[tuple[Seen, dict[str, Span]]]:
    traces: dict[str, tuple[Seen, dict[str, Span]]] = {}
    for seen, span in spans:
        found = traces.get(span.trace_id)
        if found is None:
            traces[span.trace_id] = (seen, {span.span_id: span})
        else:
            found[1].setdefault(span.span_id, span)
    return list(traces.values())


class FileStore(Protocol):
    """Where a file's spilled spans are kept between runs (`span_store.SpanStore`)."""

    def spilled(self, path: Path, label: str, reader: Reader) -> SpannedFile: ...


@contextmanager
def spilled_traces(
    files: list[TraceFile],
    label: str,
    window: Window | None = None,
    store: FileStore | None = None,
) -> Iterator[SpilledTraces]:
    """Every file of `files` spilled: taken from `store` (parsed and stored there first when
    it is not; without `window` only), else spilled to a temporary folder removed on exit. The
    problems of every file (up to `FileProblems.MAX_PROBLEMS`, then reading stops) raise as
    one `DatasetError` of `label`."""
    with tempfile.TemporaryDirectory(prefix="rag-eval-spans-") as scratch:
        spilled: list[SpannedFile] = []
        problems: list[ValidationIssue] = []
        for index, (path, name, reader) in enumerate(files):
            try:
                if store is not None and window is None:
                    spilled.append(store.spilled(path, name, reader))
                else:
                    folder = Path(scratch) / f"{index}"
                    spilled.append(spill_file(path, name, reader, folder, window))
            except DatasetError as error:  # every file's problems, not the first file's only
                problems.extend(error.issues)
            if len(problems) >= FileProblems.MAX_PROBLEMS:
                break
        if problems:
            raise DatasetError(label, problems)
        feedback: dict[str, str] = {}
        for one in spilled:
            for span_id, value in one.feedback.items():
                feedback.setdefault(span_id, value)
        yield SpilledTraces(spilled, feedback, Path(scratch))
