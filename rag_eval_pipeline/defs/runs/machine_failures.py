"""Machine failures in a run read as one line: the step fails with it, the console prints it.

`machine_failures_fail_the_step` turns a machine failure while storing an output (a full disk,
a read-only or forbidden folder: `storage.machine`) into the step's `Failure`, whose description
is the one line; the run fails in Dagster. `console_logger` is Dagster's colored console logger
(the code location's default, so `rag-eval run`, the UI and the daemon's runs use it) that
prints such a step failure as its first line and that line, without the stack trace Dagster
adds (the event log keeps everything). Any other error keeps its traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from dagster import Failure, InitLoggerContext, colored_console_logger, logger

from rag_eval_pipeline.storage.machine import MARK, machine_failure_line


@contextmanager
def machine_failures_fail_the_step(path: object) -> Iterator[None]:
    """Raise a machine failure inside the block as the step's one-line `Failure`."""
    try:
        yield
    except OSError as error:
        line = machine_failure_line(error, str(path))
        if line is None:
            raise
        raise Failure(description=line, allow_retries=False) from None


class _OneLineMachineFailures(logging.Filter):
    """Cut a record that reports a machine failure to its first line and that failure's line."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if MARK in message and "\n" in message:
            lines = message.splitlines()
            failure = next(line for line in lines if MARK in line)
            cause = failure[failure.index(MARK) :]
            record.msg = lines[0] if cause in lines[0] else f"{lines[0]} {cause}"
            record.args = ()
        return True


@logger(
    config_schema=colored_console_logger.config_schema,
    description="The colored console logger; machine failures are printed as one line.",
)
def console_logger(init_context: InitLoggerContext) -> logging.Logger:
    console = colored_console_logger.logger_fn(init_context)
    for handler in console.handlers:
        handler.addFilter(_OneLineMachineFailures())
    return console
