"""Reading the project's YAML files (`dataset.yaml`, `config/*.yaml`) without expansion bombs.

YAML anchors and aliases (`&a`, `*a`) let ten lines expand to gigabytes (nine aliases a level:
9^10 copies) and merge keys (`<<: *a`) need them, so the loader here refuses both before
composing anything, naming the file and every line that holds one (the first
`MAX_LISTED_LINES`, then how many more): one reading shows every line to fix. None of the
project's files needs them. A file is also
refused above `max_bytes` (`RAG_EVAL_MAX_YAML_BYTES`, 1 MiB by default) before it is parsed,
and nesting deeper than `MAX_YAML_DEPTH` levels (`[[[[...]]]]`: the parser recurses once per
level). Without aliases a document holds no more than its own bytes.

`load_yaml_file` and `load_yaml_text` raise `YamlFileError`, a `yaml.MarkedYAMLError` (callers
that catch `yaml.YAMLError` keep working) whose message names the file and line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

MAX_YAML_BYTES_ENV = "RAG_EVAL_MAX_YAML_BYTES"
DEFAULT_MAX_YAML_BYTES = 1 << 20
MAX_YAML_DEPTH = 64
MAX_LISTED_LINES = 20
_ALIASES_PROBLEM = "anchors and aliases (&name, *name, <<) are not allowed"


class YamlFileError(yaml.MarkedYAMLError):
    """A YAML file that cannot be read safely; `problem` says why, `problem_mark` where."""


class _NoAliasLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses nesting over `MAX_YAML_DEPTH` (given a text that
    `_refuse_aliases` passed)."""

    def __init__(self, stream: str, name: str) -> None:
        super().__init__(stream)
        self.name = name  # shown in every error's mark: `in "dataset.yaml", line 3, column 7`
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise YamlFileError(
                    problem=f"nested deeper than {MAX_YAML_DEPTH} levels",
                    problem_mark=event.start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def max_yaml_bytes() -> int:
    """The size cap of a YAML file: `RAG_EVAL_MAX_YAML_BYTES`, else 1 MiB."""
    return int(os.environ.get(MAX_YAML_BYTES_ENV) or DEFAULT_MAX_YAML_BYTES)


def _alias_marks(text: str, source: str) -> tuple[list[yaml.Mark], int | None]:
    """Where `text` holds an anchor or an alias, in order (events only: nothing is expanded),
    and the line of the syntax error that stopped the scan, if one did."""
    parser = yaml.SafeLoader(text)
    parser.name = source
    marks = []
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                marks.append(event.start_mark)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        return marks, None if mark is None else mark.line + 1
    finally:
        parser.dispose()
    return marks, None


def _refuse_aliases(text: str, source: str) -> None:
    """Raise `YamlFileError` naming every line (up to `MAX_LISTED_LINES`) with an anchor or
    an alias, the first as the error's mark, and the line of a syntax error after them."""
    marks, syntax_line = _alias_marks(text, source)
    if not marks:
        return
    lines = list(dict.fromkeys(mark.line + 1 for mark in marks))
    more = len(lines) - MAX_LISTED_LINES
    listed = ", ".join(map(str, lines[:MAX_LISTED_LINES])) + (
        f" and {more} more" if more > 0 else ""
    )
    syntax = "" if syntax_line is None else f"; invalid YAML at line {syntax_line}"
    raise YamlFileError(
        problem=f"{_ALIASES_PROBLEM}: {len(marks)} on line(s) {listed}{syntax}",
        problem_mark=marks[0],
    )


def load_yaml_text(text: str, source: str) -> Any:
    """The document in `text` (read from `source`, named in errors), without aliases."""
    _refuse_aliases(text, source)
    loader = _NoAliasLoader(text, source)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_yaml_file(path: str | os.PathLike[str], max_bytes: int | None = None) -> Any:
    """The document of the UTF-8 file at `path`, refused above `max_bytes` (default
    `max_yaml_bytes()`); raises `YamlFileError` (size, encoding, syntax, aliases) or `OSError`."""
    path = Path(path)
    limit = max_yaml_bytes() if max_bytes is None else max_bytes
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise YamlFileError(
            problem=f"{path}: larger than {limit:,} bytes (the limit, {MAX_YAML_BYTES_ENV})"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise YamlFileError(problem=f"{path}, line {line}: not valid UTF-8 text") from None
    return load_yaml_text(text, str(path))
