"""Reading a text file line by line in bounded memory: a line never holds more than the limit.

`physical_lines` reads each line with `readline(limit + 1)`: a line longer than
`max_record_bytes()` (`RAG_EVAL_MAX_RECORD_BYTES`, 16 MiB by default: a record holds a few
texts of at most `MAX_TEXT_CHARS` characters) is reported as too long and its rest skipped in
blocks of 1 MiB, so a 300 MB line is never held whole. A UTF-8 byte-order mark at the start
of the file is skipped, as in every text format read here. Line numbers are physical lines,
from 1.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

MAX_RECORD_BYTES_ENV = "RAG_EVAL_MAX_RECORD_BYTES"
DEFAULT_MAX_RECORD_BYTES = 16 << 20
SKIP_BLOCK_BYTES = 1 << 20
BOM = b"\xef\xbb\xbf"
NOT_UTF8 = "not valid UTF-8 text (save the file as UTF-8)"


def max_record_bytes() -> int:
    """The longest line (or CSV record) of a text file, in bytes: `RAG_EVAL_MAX_RECORD_BYTES`,
    16 MiB by default."""
    return int(os.environ.get(MAX_RECORD_BYTES_ENV) or DEFAULT_MAX_RECORD_BYTES)


def too_long(limit: int) -> str:
    """The problem of a line over `limit` bytes."""
    return f"line longer than {limit:,} bytes (the limit, {MAX_RECORD_BYTES_ENV})"


class Line(NamedTuple):
    """One physical line: its number, its bytes (None when over the limit)."""

    number: int
    raw: bytes | None


def physical_lines(path: Path, limit: int | None = None) -> Iterator[Line]:
    """Every line of `path` (its end of line kept), None for a line over `limit` bytes."""
    with open(path, "rb") as handle:
        yield from handle_lines(handle, limit)


def handle_lines(handle: BinaryIO, limit: int | None = None) -> Iterator[Line]:
    """Every line of an open binary `handle`, as `physical_lines` reads a file."""
    limit = max_record_bytes() if limit is None else limit
    number = 0
    while raw := handle.readline(limit + 1):
        number += 1
        if number == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        if len(raw) > limit and not raw.endswith(b"\n"):
            while (rest := handle.readline(SKIP_BLOCK_BYTES)) and not rest.endswith(b"\n"):
                pass
            yield Line(number, None)
        else:
            yield Line(number, raw)


def text_lines(path: Path) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, text, problem) of every line: text is None when the line is not UTF-8 or
    too long, and `problem` says which."""
    limit = max_record_bytes()
    for number, raw in physical_lines(path, limit):
        if raw is None:
            yield number, None, too_long(limit)
            continue
        try:
            yield number, raw.decode("utf-8"), None
        except UnicodeDecodeError:
            yield number, None, NOT_UTF8
