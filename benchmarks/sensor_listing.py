"""Scale: the dataset sensor's scan of a datasets location holding many version folders.

Writes `--versions` small valid versions (queries, qrels and corpus of 5 rows) in a local folder
and, for `--store s3`, uploads them to moto's S3 server on 127.0.0.1 (the real S3 protocol
over HTTP). Then times the sensor's work (`DatasetsResource.scan(skip=registered)`, what
`dataset_version_sensor` calls) on three ticks: (1) every folder new (each is listed, mirrored
and validated; on S3 the listing and mirroring are also timed alone, before the tick, which
then lists and validates), (2) every folder registered (the listing of version names only),
(3) one new folder among the registered ones; then the daily schedule's check of every
registered version (`DatasetsResource.verdicts`), unchanged since the sensor judged them, in
the same (long-lived) process. Compares each with Dagster's sensor evaluation timeout
(`DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS`, 60 s by default), the budget of one tick.

    .venv/bin/python benchmarks/sensor_listing.py                     # 1,000 versions, local
    .venv/bin/python benchmarks/sensor_listing.py --store s3
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SENSOR_TIMEOUT_S = 60.0


def write_version(folder: Path) -> None:
    """A small valid version: 5 queries, each judged relevant to one of 5 documents."""
    folder.mkdir(parents=True)
    rows = range(5)
    (folder / "queries.jsonl").write_text(
        "".join(
            json.dumps({"query_id": f"q{i}", "question": f"Question {i}?"}) + "\n" for i in rows
        )
    )
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": f"d{i}", "text": f"Answer {i}."}) + "\n" for i in rows)
    )
    (folder / "qrels.csv").write_text(
        "query_id,doc_id,relevance\n" + "".join(f"q{i},d{i},1\n" for i in rows)
    )


def timed(label: str, scan: Callable) -> float:
    start = time.perf_counter()
    result = scan()
    elapsed = time.perf_counter() - start
    print(
        f"{label:<44} {elapsed:8.2f} s  ({elapsed / SENSOR_TIMEOUT_S:6.1%} of the 60 s tick) "
        f"valid={len(result.valid)} invalid={len(result.invalid)}"
    )
    return elapsed


def ticks(root: str, mirror: Path, names: list[str], add_one: Callable[[], object]) -> None:
    """The three ticks' scans of the versions under `root`."""
    from rag_eval_pipeline.defs.shared.resources import DatasetsResource

    datasets = DatasetsResource(root=root, mirror=str(mirror))
    location = datasets.location
    if location.remote:
        started = time.perf_counter()
        location.local_folders(location.listings(location.version_names()))
        elapsed = time.perf_counter() - started
        print(f"{'of which: list and mirror the new versions':<44} {elapsed:8.2f} s")
    timed(f"tick 1: {len(names)} new versions", lambda: datasets.scan(skip=set()))
    timed(f"tick 2: {len(names)} registered, none new", lambda: datasets.scan(skip=set(names)))
    add_one()
    timed(f"tick 3: {len(names)} registered, one new", lambda: datasets.scan(skip=set(names)))
    timed(f"schedule: {len(names)} registered, unchanged", lambda: datasets.verdicts(names))


def upload(local: Path, url: str) -> float:
    from rag_eval_pipeline.storage.objects import storage_path

    start = time.perf_counter()
    target = storage_path(url)
    target.fs.put(str(local) + "/", target.path, recursive=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--store", choices=["local", "s3"], default="local")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sensor-listing-"))
    try:
        local = work / "datasets"
        names = [f"v{i:05d}" for i in range(args.versions)]
        for name in names:
            write_version(local / name)
        if args.store == "local":
            ticks(str(local), work / "mirror", names, lambda: write_version(local / "new"))
            return
        run_on_s3(local, work, names)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_on_s3(local: Path, work: Path, names: list[str]) -> None:
    import boto3
    import s3fs
    from moto.server import ThreadedMotoServer

    from rag_eval_pipeline_tests.s3_server import s3_environment

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        os.environ.update(s3_environment(f"http://{host}:{port}"))
        s3fs.S3FileSystem.clear_instance_cache()
        boto3.client("s3").create_bucket(Bucket="datasets")
        url = "s3://datasets/root"
        print(f"uploaded {len(names) * 3} objects in {upload(local, url):.1f} s")
        write_version(work / "new" / "new")
        ticks(url, work / "mirror", names, lambda: upload(work / "new", url))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
