"""The `flips` dataset version: 60 questions, one relevant document each, and a logged TREC run
per system that ranks it first except for the questions the system misses.

Between `DAY1` and `DAY2`, `drop` loses the relevant document of 6 questions it answered (6 of
60 pairs flip 1 → 0, none back: exact one-sided p = 0.0156), `same` is unchanged, and `swap`
loses 6 and gains 6. `HOSTILE_SYSTEM` (a run-file name) and question 0 carry markup a browser
would execute if the report did not escape them; both set `window.__xss`.
"""

from __future__ import annotations

import json
from pathlib import Path

VERSION, DAY1, DAY2 = "flips", "2026-11-20", "2026-11-21"
N = 60
HOSTILE_SYSTEM = "<img src=x onerror=window.__xss=1>"
HOSTILE_QUESTION = "<script>window.__xss = 1; alert(1)</script> <img src=x onerror=window.__xss=2>"
BASE_MISSES = set(range(12))  # 48 of 60 hits: HitRate@1 = 0.80 on day 1
DAY1_MISSES = {"drop": BASE_MISSES, "same": BASE_MISSES, "swap": BASE_MISSES}
DAY2_MISSES = {
    "drop": BASE_MISSES | set(range(20, 26)),
    "same": BASE_MISSES,
    "swap": (BASE_MISSES - set(range(6))) | set(range(20, 26)),
}


def question(i: int) -> str:
    return HOSTILE_QUESTION if i == 0 else f"question number {i}"


def write_version(folder: Path, misses: dict[str, set[int]], n: int = N) -> None:
    """`n` (60) questions with one relevant document each; a run per system (the file's name;
    its tag column is not read) that ranks the relevant document first except for the
    questions in `misses[system]`."""
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"query_id": f"q{i}", "question": question(i)}) + "\n" for i in range(n))
    )
    (folder / "qrels.csv").write_text(
        "query_id,doc_id,relevance\n" + "".join(f"q{i},rel{i},1\n" for i in range(n))
    )
    for system, missed in misses.items():
        lines = []
        for i in range(n):
            docs = [f"other{i}a", f"other{i}b"] if i in missed else [f"rel{i}", f"other{i}a"]
            lines += [f"q{i} Q0 {doc} {rank} {10 - rank} run\n" for rank, doc in enumerate(docs, 1)]
        (folder / "runs" / f"{system}.trec").write_text("".join(lines))
