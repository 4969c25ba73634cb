"""Errors raised for bad dataset input, each naming the file, row and column at fault."""

from __future__ import annotations

from dataclasses import dataclass

from rag_eval_pipeline.text.shown import capped

MAX_MESSAGE_CHARS = 2_000
MAX_FILE_ISSUES = 100  # problems collected in one file before its reading stops


@dataclass(frozen=True)
class ValidationIssue:
    """One problem in one place of a dataset file.

    `row` is the 1-based data row (header excluded); `line` the 1-based line in a text file when
    it differs from what a reader would guess (JSONL with blank lines, CSV with a header).
    """

    file: str
    message: str
    row: int | None = None
    column: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        """`file, row N (line L), column 'c': message`, the message capped at
        `MAX_MESSAGE_CHARS` (whatever value a check put in it)."""
        where = [self.file]
        if self.row is not None:
            where.append(f"row {self.row}" + (f" (line {self.line})" if self.line else ""))
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.column is not None:
            where.append(f"column '{self.column}'")
        return f"{', '.join(where)}: {capped(self.message, MAX_MESSAGE_CHARS)}"


class DatasetError(ValueError):
    """A dataset version that cannot be used, with every problem found listed."""

    max_listed = 20

    def __init__(self, source: str, issues: list[ValidationIssue]) -> None:
        self.source = source
        self.issues = issues
        listed = "\n".join(f"  - {issue}" for issue in issues[: self.max_listed])
        more = len(issues) - self.max_listed
        suffix = f"\n  ... and {more} more" if more > 0 else ""
        super().__init__(f"Invalid dataset {source}: {len(issues)} problem(s)\n{listed}{suffix}")

    @property
    def summary(self) -> str:
        """One line: the first problem and how many more there are."""
        first = str(self.issues[0]) if self.issues else "invalid"
        more = f" (and {len(self.issues) - 1} more problem(s))" if len(self.issues) > 1 else ""
        return f"{first}{more}"


class InvalidVersionName(ValueError):
    """A dataset version name that could escape its folder or break partition keys."""
