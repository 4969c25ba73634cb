"""`rag-eval`: validate dataset folders, run evaluations on the persistent instance, read results.

rag-eval validate PATH
rag-eval run [--dataset-version V ...] [--date YYYY-MM-DD] [--select ASSET_SELECTION] [--force]
rag-eval run [--dataset-version V ...] --days N     (the last N days up to today, here, in order)
rag-eval run [--dataset-version V ...] --from YYYY-MM-DD --to YYYY-MM-DD   (a Dagster backfill)
             [--fail-on-regression]
rag-eval run [--dataset-version V ...] [--date D] --dry-run   (what `estimate` prints; no run)
rag-eval estimate [--dataset-version V ...] [--date D]   (LLM prompts, tokens, cost; no calls)
rag-eval scorecard [--dataset-version V ...] [--date D] [--tier T] [--system S] [--format F]
rag-eval alerts [--dataset-version V] [--format F]
rag-eval cache prune [--dry-run] [--keep-days N]   (delete unused staged copies, print bytes freed)
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from rag_eval_pipeline.cli import backfill, cache, estimate, results, run, validate
from rag_eval_pipeline.cli.common import UsageError, open_instance
from rag_eval_pipeline.text.escaping import terminal_text

__all__ = ["build_parser", "main", "open_instance", "run_and_exit"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `rag-eval`: each command module adds its own."""
    parser = argparse.ArgumentParser(
        prog="rag-eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    validate.add_parser(commands)
    run.add_parser(commands)
    estimate.add_parser(commands)
    results.add_parsers(commands)
    cache.add_parsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `rag-eval` console script."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "run":
        backfill.check_date_range(parser, args)
    from rag_eval_pipeline.storage.machine import machine_failure_line
    from rag_eval_pipeline.storage.parquet import UnreadableFileError

    try:
        return int(args.handler(args))
    except UsageError as error:
        print(terminal_text(f"rag-eval {args.command}: error: {error}"), file=sys.stderr)
        return 2
    except UnreadableFileError as error:
        print(terminal_text(f"rag-eval {args.command}: error: {error}"), file=sys.stderr)
        return 1
    except Exception as error:
        line = machine_failure_line(error, os.environ.get("DAGSTER_HOME"))
        if line is None:
            raise
        print(terminal_text(f"rag-eval {args.command}: {line}"), file=sys.stderr)
        return 1


def run_and_exit() -> NoReturn:
    """The `rag-eval` console script: `main`, then end the process without tearing it down.

    A process that imported Dagster, pandas and SQLAlchemy (over 2,000 modules) spends about a
    second in interpreter shutdown, tearing down modules and collecting garbage, after every
    command. What must happen at exit is registered with `atexit` (log handlers, Dagster's
    resource and instance exit stacks, file locks): those handlers run, the standard streams are
    flushed, then the process ends with `os._exit`. Everything stored was committed already.
    """
    code = main()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
