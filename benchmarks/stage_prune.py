"""Scale: the stage's cleanup rule (`storage.stage_entries.prune_stage`) over many entries.

Writes `--entries` staged copies (a manifest, a `_used` marker and a generation of `--days`
small day files each) under a local folder and under a bucket of moto's S3 server on 127.0.0.1,
then times `prune_stage` when nothing is due (what every publication pays) and when every copy
is unused (all removed). The yardstick is the round trip of one listing request to the same
store, so the per-entry cost reads as a number of requests.

    .venv/bin/python benchmarks/stage_prune.py --entries 300
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time

import boto3
from moto.server import ThreadedMotoServer
from upath import UPath

from rag_eval_pipeline.storage.objects import storage_path
from rag_eval_pipeline.storage.stage_entries import prune_stage

DAY_S = 86_400.0


def populate(root: UPath, entries: int, days: int) -> None:
    """`entries` published copies under `root`, written in one batch per store."""
    files = {}
    for index in range(entries):
        entry = root / f"k{index:05d}"
        generation = f"generation-{index:032x}"
        names = [f"2026-10-{day + 1:02d}" for day in range(days)]
        manifest = {"generation": generation, "num_rows": days, "days": names}
        files[(entry / "_staged.json").path] = json.dumps(manifest).encode()
        files[(entry / "_used").path] = b""
        for name in names:
            files[(entry / generation / f"{name}.parquet").path] = b"x" * 1024
    if root.protocol in ("", "file", "local"):
        for path, data in files.items():
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
    else:
        root.fs.pipe(files)


def timed(label: str, call, yardstick: float, entries: int) -> None:
    started = time.perf_counter()
    removed = call()
    wall = time.perf_counter() - started
    per_entry = wall / entries
    print(
        f"{label:<42} {wall:8.3f} s  {per_entry * 1000:7.2f} ms/entry  "
        f"= {per_entry / yardstick:5.1f} listing round trips  ({len(removed)} removed)",
        flush=True,
    )


def measure(root: UPath, entries: int, days: int) -> None:
    populate(root, entries, days)
    started = time.perf_counter()
    for _ in range(20):
        root.fs.ls((root / "k00000").path, detail=True)
    yardstick = (time.perf_counter() - started) / 20
    print(f"{root.protocol or 'local'}: one listing round trip {yardstick * 1000:.2f} ms")
    timed(
        "nothing due (each publication)",
        lambda: prune_stage(root, 7 * DAY_S, 3600),
        yardstick,
        entries,
    )
    timed("every copy unused (all removed)", lambda: prune_stage(root, 0, -1e9), yardstick, entries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=300)
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        measure(storage_path(folder), args.entries, args.days)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ENDPOINT_URL=f"http://{host}:{port}",
    )
    try:
        boto3.client("s3").create_bucket(Bucket="stage")
        measure(storage_path("s3://stage/staged"), args.entries, args.days)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
