"""`rag-eval cache prune [--dry-run]`: apply the staged copies' cleanup rule now and print what
it removed and the bytes freed (`storage.stage_entries.prune_stage`; each stager applies the
same rule when it publishes)."""

from __future__ import annotations

import argparse

from rag_eval_pipeline.settings import STAGED_GRACE_S, STAGED_KEEP_DAYS, STAGED_URL
from rag_eval_pipeline.text.escaping import terminal_text


def cmd_prune(args: argparse.Namespace) -> int:
    """Remove the staged copies unused for `--keep-days`, dead writers' leftovers and
    unpublished generations past the grace under `RAG_EVAL_STAGED`; print each and the total."""
    from rag_eval_pipeline.storage.objects import storage_path
    from rag_eval_pipeline.storage.stage_entries import prune_stage

    root = storage_path(STAGED_URL)
    removals = prune_stage(root, args.keep_days * 86_400, STAGED_GRACE_S, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for removal in removals:
        print(terminal_text(f"{verb} {removal.path}: {removal.reason}, {removal.num_bytes:,} B"))
    freed = sum(removal.num_bytes for removal in removals)
    summary = "would free" if args.dry_run else "freed"
    paths = f"{len(removals)} path" + ("" if len(removals) == 1 else "s")
    print(terminal_text(f"{summary} {freed:,} bytes in {paths} under {root}"))
    return 0


def add_parsers(commands: argparse._SubParsersAction) -> None:
    """`rag-eval cache prune [--dry-run] [--keep-days N]`."""
    cache = commands.add_parser("cache", help="the caches under RAG_EVAL_CACHE")
    actions = cache.add_subparsers(dest="action", required=True)
    prune = actions.add_parser(
        "prune",
        help="delete staged copies not used for --keep-days and what dead writers left",
    )
    prune.add_argument("--dry-run", action="store_true", help="print what would go; remove none")
    prune.add_argument(
        "--keep-days",
        type=float,
        default=STAGED_KEEP_DAYS,
        help=f"default: RAG_EVAL_STAGED_KEEP_DAYS ({STAGED_KEEP_DAYS:g})",
    )
    prune.set_defaults(handler=cmd_prune)
