"""Scale: a local version's fingerprint with and without the stat cache (`storage.digest_cache`).

Writes a version folder holding one `--mib` MiB logs file (random bytes) and a few small files,
waits out the racy margin, then times `files_fingerprint` three ways in this process: every
byte hashed (`files_digest`, the rule without a cache), the first call with the cache (hashes
and records the files' stat values) and the next call (stats only). The hash's own pace
(MiB/s) is the physical yardstick of the first two; the last one should not depend on the size.

    .venv/bin/python benchmarks/file_fingerprint_cache.py --mib 1536
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from rag_eval_pipeline.storage import digest_cache
from rag_eval_pipeline.storage.code_version import files_digest, source_files
from rag_eval_pipeline.storage.file_fingerprint import files_fingerprint


def write_version(folder: Path, mib: int) -> None:
    (folder / "logs").mkdir(parents=True)
    for name in ("queries.jsonl", "corpus.jsonl", "qrels.csv"):
        (folder / name).write_bytes(os.urandom(4096))
    with (folder / "logs" / "logs.jsonl").open("wb") as stream:
        for _ in range(mib):
            stream.write(os.urandom(2**20))


def timed(label: str, call, mib: int) -> str:
    started = time.perf_counter()
    value = call()
    wall = time.perf_counter() - started
    print(f"{label:<38} {wall:9.4f} s  ({mib / wall:8,.0f} MiB/s of the version)", flush=True)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256, help="size of the logs file")
    parser.add_argument("--tmp", default=None, help="where to write (default: the system's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.tmp) as name:
        folder, cache = Path(name) / "version", Path(name) / "cache"
        write_version(folder, args.mib)
        time.sleep(digest_cache.RACY_MARGIN_NS / 1e9 + 0.5)  # files older than the racy margin
        print(f"version: {args.mib:,} MiB logs file + 3 small files")
        plain = timed(
            "every byte hashed (no cache)",
            lambda: files_digest(source_files(folder, "*"), folder),
            args.mib,
        )
        cold = timed(
            "cached, first call (hash + record)", lambda: files_fingerprint(folder, cache), args.mib
        )
        warm = timed(
            "cached, next call (stats only)", lambda: files_fingerprint(folder, cache), args.mib
        )
        assert plain == cold == warm, (plain, cold, warm)


if __name__ == "__main__":
    main()
