"""Peak memory of `rag-eval validate` on hostile files: a YAML alias bomb, a giant line, a
giant run file.

Each case is a dataset folder written in a temporary directory (deleted afterwards); `rag-eval
validate` runs on it in a child process, whose peak resident memory (`ru_maxrss` from
`os.wait4`) and wall time are printed beside the plain dataset's (the constant: Python, pandas,
pyarrow and the project imported), with the ratio of the extra memory to the largest file. The
goal (docs/security.md): at most 2x the largest file plus that constant.

- `bomb`: `dataset.yaml` of 10 lines, nine aliases a level (43 million strings expanded);
- `line`: a `qrels.csv` row whose `doc_id` is `--line-mb` MB on one line (300);
- `trec`: the same in TREC qrels (`qrels.trec`, read by Arrow's block reader first);
- `run`: a valid TREC run of `--run-mb` MB (1000) over a synthetic corpus of 4,000 documents;
- `corpus`: a valid `corpus.jsonl` of `--corpus-mb` MB (200), a table read whole.

    .venv/bin/python benchmarks/hostile_files.py                      # 300 MB line, 1 GB run
    .venv/bin/python benchmarks/hostile_files.py --line-mb 30 --run-mb 100
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
DOCS, QUERIES_PER_BLOCK = 4000, 100


def validate(folder: Path) -> tuple[int, float, float, str]:
    """Exit code, peak RSS (MiB), wall seconds and the first line printed of `rag-eval validate
    folder` in a child process."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "rag_eval_pipeline.cli", "validate", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    assert child.stdout is not None
    first = child.stdout.readline().decode(errors="replace").strip()
    child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, usage.ru_maxrss / 1024, time.perf_counter() - started, first


def synthetic_dataset(folder: Path, queries: int) -> None:
    """A corpus of `DOCS` documents, `queries` questions, one judgment each."""
    folder.mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w") as corpus:
        corpus.writelines(
            json.dumps({"doc_id": f"d{i}", "text": f"doc {i}"}) + "\n" for i in range(DOCS)
        )
    with open(folder / "queries.jsonl", "w") as out:
        out.writelines(
            json.dumps({"query_id": f"q{i}", "question": f"question {i}?"}) + "\n"
            for i in range(queries)
        )
    with open(folder / "qrels.csv", "w") as out:
        out.write("query_id,doc_id,relevance\n")
        out.writelines(f"q{i},d{i % DOCS},1\n" for i in range(queries))


def bomb_case(root: Path) -> Path:
    folder = root / "bomb"
    synthetic_dataset(folder, 10)
    lines = ['a0: &a0 "laugh"']
    lines += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 9)]
    (folder / "dataset.yaml").write_text("\n".join([*lines, "language: *a8"]) + "\n")
    return folder


def write_giant_id(path: Path, mode: str, before: str, megabytes: int, after: str) -> None:
    """Write `before`, a document id of `megabytes` MB (1 MiB at a time), then `after`."""
    with open(path, mode) as out:
        out.write(before)
        block = "d" * (1 << 20)
        for _ in range(megabytes):
            out.write(block)
        out.write(after)


def line_case(root: Path, megabytes: int) -> Path:
    folder = root / "line"
    synthetic_dataset(folder, 10)
    write_giant_id(folder / "qrels.csv", "a", "q1,", megabytes, ",1\n")
    return folder


def trec_line_case(root: Path, megabytes: int) -> Path:
    """TREC qrels (`qrels.trec`) whose second line holds a `megabytes` MB document id."""
    folder = root / "trec-line"
    synthetic_dataset(folder, 10)
    (folder / "qrels.csv").unlink()
    write_giant_id(folder / "qrels.trec", "w", "q1 0 d1 1\nq2 0 ", megabytes, " 1\n")
    return folder


def run_case(root: Path, megabytes: int) -> Path:
    """Every query ranks all `DOCS` documents (unique keys), as many queries as fill the size."""
    per_query = sum(len(f"q0000 Q0 d{d} {d + 1} {1 - d / DOCS:.6f} bench\n") for d in range(DOCS))
    queries = max(1, megabytes * 10**6 // per_query)
    folder = root / "run"
    synthetic_dataset(folder, queries)
    (folder / "runs").mkdir()
    docs = [f" Q0 d{d} {d + 1} {1 - d / DOCS:.6f} bench\n" for d in range(DOCS)]
    with open(folder / "runs" / "bench.trec", "w") as out:
        for q in range(queries):
            prefix = f"q{q}"
            out.write("".join(prefix + line for line in docs))
    return folder


def corpus_case(root: Path, megabytes: int) -> Path:
    """A valid `corpus.jsonl` of `megabytes` MB (1 kB documents), a table read whole."""
    folder = root / "corpus"
    synthetic_dataset(folder, 10)
    text = "lorem ipsum dolor sit amet " * 37
    with open(folder / "corpus.jsonl", "a") as out:
        for i in range(megabytes * 1000):
            out.write(json.dumps({"doc_id": f"extra{i}", "text": text}) + "\n")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--line-mb", type=int, default=300)
    parser.add_argument("--run-mb", type=int, default=1000)
    parser.add_argument("--corpus-mb", type=int, default=200)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hostile-files-"))
    try:
        plain = root / "plain"
        synthetic_dataset(plain, 10)
        _, constant, seconds, _ = validate(plain)
        header = ("case", "largest file", "peak RSS", "extra", "ratio", "time")
        print("{:<6} {:>14} {:>10} {:>9} {:>6} {:>7}".format(*header))
        print(f"{'plain':<6} {'-':>14} {constant:>8.0f}MiB {'-':>9} {'-':>6} {seconds:>6.1f}s")
        for name, build in (
            ("bomb", bomb_case),
            ("line", lambda r: line_case(r, args.line_mb)),
            ("trec", lambda r: trec_line_case(r, args.line_mb)),
            ("run", lambda r: run_case(r, args.run_mb)),
            ("corpus", lambda r: corpus_case(r, args.corpus_mb)),
        ):
            folder = build(root)
            largest = max(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20
            code, peak, seconds, first = validate(folder)
            extra = peak - constant
            print(
                f"{name:<6} {largest:>11.1f}MiB {peak:>8.0f}MiB {extra:>7.0f}MiB "
                f"{extra / largest:>6.2f} {seconds:>6.1f}s  exit {code}: {first[:100]}"
            )
            shutil.rmtree(folder)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
