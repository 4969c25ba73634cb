"""Trace files read through their compression, recognized from their first bytes.

The OpenTelemetry Collector's file exporter compresses with zstd (`compression: zstd`): with
its native-compression feature gate the whole file is a zstd stream (one frame per write
when files rotate, frames concatenated), without it each length-prefixed record is one zstd
frame (`decompress_record`). Rotated backups are often gzipped by log rotation. A zstd frame
starts with `28 B5 2F FD`, a gzip member with `1F 8B`; anything else is read as it is.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import zstandard

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
CHUNK_BYTES = 1 << 20
DECOMPRESSION_ERRORS = (zstandard.ZstdError, OSError, EOFError, ValueError)
"""What a corrupt zstd or gzip stream raises (`gzip.BadGzipFile` is an `OSError`)."""


def compression_of(head: bytes) -> str | None:
    """`zstd`, `gzip` or None, from the first bytes of a file or a record."""
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    return None


@contextmanager
def open_decompressed(path: Path) -> Iterator[BinaryIO]:
    """`path` opened for buffered binary reading, decompressed as it is read when it is a
    zstd stream (all its frames) or a gzip file (all its members)."""
    with open(path, "rb") as raw:
        kind = compression_of(raw.peek(4)[:4])
        if kind is None:
            yield raw
        elif kind == "gzip":
            with gzip.GzipFile(fileobj=raw) as handle:
                yield handle
        else:
            reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
            with io.BufferedReader(reader) as handle:
                yield handle


def decompress_record(payload: bytes, max_bytes: int) -> bytes:
    """A record's bytes: decompressed when they are a zstd frame (or several) or gzip data,
    as they are otherwise. More than `max_bytes` decompressed raises `ValueError`."""
    kind = compression_of(payload[:4])
    if kind is None:
        return payload
    if kind == "gzip":
        reader: BinaryIO = gzip.GzipFile(fileobj=io.BytesIO(payload))
    else:
        reader = zstandard.ZstdDecompressor().stream_reader(
            io.BytesIO(payload), read_across_frames=True
        )
    chunks, size = [], 0
    with reader:
        while chunk := reader.read(min(CHUNK_BYTES, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise ValueError(f"over {max_bytes:,} bytes once decompressed")
    return b"".join(chunks)
