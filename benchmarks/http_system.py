"""Benchmark the HTTP system under test (`HttpRag`) against a loopback RAG service.

The service (`rag_eval_pipeline_tests.rag_service`) runs in a child process, so its CPU time
does not compete with the client's threads, and answers every question after a fixed latency
(default 20 ms) with three sources. For each concurrency level (default 1, 4, 16) `HttpRag`
answers `--n` distinct questions (templated JSON body, secret header, JSONPath selectors for
answer, ids and contexts, retry policy armed), and so does the peer: a bare loop of
`httpx.Client.post` + `json.loads` on the same number of threads, with no templating, selectors
or retries. It prints the elapsed time against the ideal ``n × latency / concurrency``, the
ratio of ours to the peer, and the client CPU per question.

Usage: ``python benchmarks/http_system.py [--n 1000] [--latency 0.02] [--concurrency 1 4 16]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection

import httpx
import pandas as pd

from rag_eval_pipeline.datasets.http_config import HttpSystemConfig
from rag_eval_pipeline.systems.http_rag import HttpRag
from rag_eval_pipeline_tests.rag_service import run_rag_service

TOKEN = "bench-token-0123456789"


def serve(connection: Connection, n: int, latency_s: float) -> None:
    """Child process: serve until the parent sends anything."""
    documents = {f"question {i}": [f"d{i}", f"d{i + 1}", f"d{i + 2}"] for i in range(n)}
    with run_rag_service(documents, delay_s=latency_s) as service:
        connection.send(service.url)
        connection.recv()


def ours(url: str, questions: list[str], concurrency: int) -> pd.DataFrame:
    config = HttpSystemConfig.from_mapping(
        {
            "url": url,
            "headers": {"Authorization": "Bearer ${RAG_EVAL_HTTP_TOKEN}"},
            "body": {"query": "$question", "session": "$session_id", "turn": "$turn"},
            "answer": "$.data.answer",
            "retrieved_doc_ids": "$.data.sources[*].id",
            "contexts": "$.data.sources[*].text",
            "max_concurrency": concurrency,
            "timeout_s": 10,
        },
        "benchmark",
    )
    queries = pd.DataFrame(
        {"query_id": [f"q{i}" for i in range(len(questions))], "question": questions}
    )
    return HttpRag(config, environ={"RAG_EVAL_HTTP_TOKEN": TOKEN}).answer(queries)


def bare(url: str, questions: list[str], concurrency: int) -> list[object]:
    with (
        httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10) as client,
        ThreadPoolExecutor(concurrency) as pool,
    ):
        return list(
            pool.map(lambda q: json.loads(client.post(url, json={"query": q}).content), questions)
        )


def timed(function, *args) -> tuple[float, float, object]:  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(child, args.n, args.latency))
    server.start()
    url = parent.recv()
    print(f"{args.n} questions, service latency {args.latency * 1000:g} ms")
    print(
        f"{'concurrency':>11} {'ideal':>8} {'ours':>8} {'bare':>8} {'ours/bare':>9} "
        f"{'CPU/q ours':>10} {'CPU/q bare':>10}"
    )
    try:
        for level in args.concurrency:
            questions = [f"question {i}" for i in range(args.n)]
            ideal = args.n * args.latency / level
            wall, cpu, out = timed(ours, url, questions, level)
            assert out["error"].isna().all(), out["error"].dropna().head()
            assert out["retrieved_doc_ids"].map(len).eq(3).all()
            bare_wall, bare_cpu, _ = timed(bare, url, questions, level)
            print(
                f"{level:>11} {ideal:>7.2f}s {wall:>7.2f}s {bare_wall:>7.2f}s "
                f"{wall / bare_wall:>8.2f}× {cpu / args.n * 1000:>8.2f}ms "
                f"{bare_cpu / args.n * 1000:>8.2f}ms"
            )
    finally:
        parent.send("stop")
        server.join(timeout=10)


if __name__ == "__main__":
    main()
