"""Build the two shipped demo dataset versions, `demo-v1` and `demo-v2`.

The demo datasets describe the help center of Nimbus Cloud, a fictional cloud provider: product
documentation articles (the corpus), questions with reference answers and graded relevance
judgments, a logged run of the production BM25 retriever, logged real-user interactions and
human-labelled answers for judge evaluation. The text lives in `scripts/demo_data/` (YAML and
JSONL: corpus, questions, logs, judge labels, demo-v2's corrections, descriptions); this script
only loads it, computes the BM25 retrievals, latencies and feedback, and writes the files.

`demo-v2` is the next release of the same dataset: the `demo-v1` corpus plus the documentation of
a new product (Nimbus Functions), more questions and logs, and a few corrected labels, listed in
its DATASET.md. Items that did not change keep their ids and content.

The output is deterministic (fixed order, sorted JSON keys, UTF-8, `\\n` line endings), so the
committed files can be checked against a fresh build:

    python scripts/build_demo_datasets.py              # writes data/datasets/demo-v{1,2}/
    python scripts/build_demo_datasets.py --out /tmp/x  # writes /tmp/x/demo-v{1,2}/
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

DEMO_DATA = Path(__file__).resolve().parent / "demo_data"

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "data" / "datasets"
RUN_TAG = "production-bm25"
RUN_DEPTH = 10
LOG_DEPTH = 5
LOG_CONTEXTS = 3  # retrieved documents the logged system gave its generator
LOG_MODEL = "gpt-4o-mini"  # the logged system's generator, for token pricing
BM25_K1 = 1.2
BM25_B = 0.75

# --------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    """One help-center article."""

    doc_id: str
    cluster: str
    title: str
    text: str


@dataclass(frozen=True)
class Query:
    """A question with its reference answer and graded judgments {doc_id: 0..3}."""

    query_id: str
    question: str
    answer: str
    qrels: dict[str, int]
    session_id: str | None = None
    turn: int | None = None


@dataclass(frozen=True)
class QrelChange:
    """A relevance label of demo-v1 corrected (or a missing one added) in demo-v2."""

    query_id: str
    doc_id: str
    relevance: int
    reason: str


@dataclass(frozen=True)
class AnswerChange:
    """A ground-truth answer of demo-v1 corrected in demo-v2."""

    query_id: str
    answer: str
    reason: str


@dataclass(frozen=True)
class LogEntry:
    """A logged real-user interaction; the retrieved documents are computed with BM25."""

    log_id: str
    timestamp: str
    session_id: str
    question: str
    answer: str
    shown_doc_id: str


@dataclass(frozen=True)
class JudgeLabel:
    """An answer labelled by two human raters (1-5) and with the correct show/hide decision."""

    label_id: str
    question: str
    context_doc_ids: tuple[str, ...]
    answer: str
    show: bool
    rater_a: int
    rater_b: int


@dataclass(frozen=True)
class JudgeChange:
    """A show/hide label of demo-v1 corrected in demo-v2."""

    label_id: str
    show: bool
    reason: str


@dataclass
class Version:
    """Everything that goes into one dataset version folder."""

    name: str
    docs: list[Doc]
    queries: list[Query]
    logs: list[dict[str, Any]]
    judge_labels: list[JudgeLabel]
    description: str
    changes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Loading the text from scripts/demo_data/
# --------------------------------------------------------------------------------------------


def _yaml(name: str) -> Any:
    return yaml.safe_load((DEMO_DATA / name).read_text(encoding="utf-8"))


def _jsonl(name: str) -> list[dict[str, Any]]:
    text = (DEMO_DATA / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _labels(name: str) -> list[JudgeLabel]:
    return [
        JudgeLabel(**{**row, "context_doc_ids": tuple(row["context_doc_ids"])})
        for row in _jsonl(name)
    ]


SETTINGS = _yaml("versions.yaml")
EXPECTED_PATTERNS: dict[str, str] = SETTINGS["expected_patterns"]
HARD_QUERY_IDS: tuple[str, ...] = tuple(SETTINGS["hard_query_ids"])
NEAR_DUPLICATES = tuple((a, b) for a, b in SETTINGS["near_duplicates"])
MANIFESTS: dict[str, str] = SETTINGS["manifests"]
_CORPUS, _QUERIES, _CHANGES = _yaml("corpus.yaml"), _yaml("queries.yaml"), _yaml("changes.yaml")
CORPUS_V1 = [Doc(**row) for row in _CORPUS["demo-v1"]]
CORPUS_V2_NEW = [Doc(**row) for row in _CORPUS["demo-v2"]]
QUERIES_V1 = [Query(**row) for row in _QUERIES["demo-v1"]]
QUERIES_V2_NEW = [Query(**row) for row in _QUERIES["demo-v2"]]
QREL_CHANGES_V2 = [QrelChange(**row) for row in _CHANGES["qrels"]]
ANSWER_CHANGES_V2 = [AnswerChange(**row) for row in _CHANGES["answers"]]
JUDGE_CHANGES_V2 = [JudgeChange(**row) for row in _CHANGES["judge_labels"]]
LOGS_V1 = [LogEntry(**row) for row in _jsonl("logs-demo-v1.jsonl")]
LOGS_V2_NEW = [LogEntry(**row) for row in _jsonl("logs-demo-v2.jsonl")]
JUDGE_LABELS_V1 = _labels("judge_labels-demo-v1.jsonl")
JUDGE_LABELS_V2_NEW = _labels("judge_labels-demo-v2.jsonl")


# --------------------------------------------------------------------------------------------
# BM25
# --------------------------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens."""
    return re.findall(r"\w+", text.lower())


class BM25:
    """A minimal Okapi BM25 index."""

    def __init__(self, docs: list[Doc], k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.doc_ids = [d.doc_id for d in docs]
        self.tfs = [Counter(tokenize(f"{d.title} {d.text}")) for d in docs]
        self.lengths = [sum(tf.values()) for tf in self.tfs]
        self.avgdl = sum(self.lengths) / len(self.lengths)
        df = Counter(term for tf in self.tfs for term in tf)
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def score(self, query_terms: list[str], i: int) -> float:
        """BM25 score of document `i` for the (possibly repeated) query terms."""
        tf, norm = self.tfs[i], self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avgdl)
        return sum(
            self.idf[t] * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in query_terms if t in tf
        )

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The top `k` documents with a positive score, best first (ties by doc id)."""
        terms = tokenize(query)
        scored = [(self.score(terms, i), doc_id) for i, doc_id in enumerate(self.doc_ids)]
        ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
        return [(doc_id, score) for score, doc_id in ranked[:k]]


# --------------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------------


def latency_ms(log_id: str, n_retrieved: int) -> float:
    """A plausible end-to-end latency, reproducible from the log id."""
    rng = random.Random(log_id)
    return round(180.0 + 25.0 * n_retrieved + rng.lognormvariate(6.2, 0.35), 1)


def retrieval_latency_ms(log_id: str, n_retrieved: int) -> float:
    """The retrieval part of the latency (the rest is generation), reproducible."""
    rng = random.Random(f"{log_id}-retrieval")
    return round(120.0 + 25.0 * n_retrieved + rng.uniform(0.0, 60.0), 1)


def feedback(log_id: str) -> str | None:
    """Thumbs up/down or a 1-5 rating for about 85% of the interactions, reproducible."""
    draw = random.Random(f"{log_id}-feedback").random()
    if draw < 0.55:
        return "up"
    if draw < 0.68:
        return "down"
    if draw < 0.85:
        return str(1 + int((draw - 0.68) / 0.17 * 5))
    return None


def token_count(*texts: str) -> int:
    """A rough token count (1.3 per word), the order of magnitude a tokenizer gives."""
    return round(1.3 * sum(len(text.split()) for text in texts))


def log_rows(entries: list[LogEntry], index: BM25, docs: list[Doc]) -> list[dict[str, Any]]:
    """Log records for each entry: the BM25 top-5 retrieval, the top-3 texts given to the
    generator as contexts, latencies (total, retrieval, generation), tokens of the generator
    (`LOG_MODEL`, priced by litellm), user feedback, and an `error` for about 1 in 20 (a
    reranker timeout: the answer came from the first-stage retrieval)."""
    texts = {d.doc_id: d.text for d in docs}
    rows = []
    for e in entries:
        retrieved = [doc_id for doc_id, _ in index.search(e.question, LOG_DEPTH)]
        contexts = [texts[d] for d in retrieved[:LOG_CONTEXTS]]
        total = latency_ms(e.log_id, len(retrieved))
        retrieval = min(retrieval_latency_ms(e.log_id, len(retrieved)), total)
        failed = random.Random(f"{e.log_id}-error").random() < 0.05
        rows.append(
            {
                "log_id": e.log_id,
                "timestamp": e.timestamp,
                "session_id": e.session_id,
                "question": e.question,
                "answer": e.answer,
                "retrieved_doc_ids": retrieved,
                "contexts": contexts,
                "shown_doc_id": e.shown_doc_id,
                "latency_ms": total,
                "retrieval_latency_ms": retrieval,
                "generation_latency_ms": round(total - retrieval, 1),
                "error": "reranker timed out; answered from first-stage retrieval"
                if failed
                else None,
                "model": LOG_MODEL,
                "prompt_tokens": token_count(e.question, *contexts),
                "completion_tokens": token_count(e.answer),
                "feedback": feedback(e.log_id),
            }
        )
    return rows


def apply_v2_changes(queries: list[Query]) -> list[Query]:
    """demo-v1 questions with the demo-v2 label and answer corrections applied."""
    by_id = {q.query_id: q for q in queries}
    for change in QREL_CHANGES_V2:
        q = by_id[change.query_id]
        by_id[q.query_id] = replace(q, qrels={**q.qrels, change.doc_id: change.relevance})
    for fix in ANSWER_CHANGES_V2:
        by_id[fix.query_id] = replace(by_id[fix.query_id], answer=fix.answer)
    return [by_id[q.query_id] for q in queries]


def apply_judge_changes(labels: list[JudgeLabel]) -> list[JudgeLabel]:
    """demo-v1 judge labels with the demo-v2 show/hide corrections applied."""
    fixes = {c.label_id: c for c in JUDGE_CHANGES_V2}
    return [replace(j, show=fixes[j.label_id].show) if j.label_id in fixes else j for j in labels]


def change_list() -> list[str]:
    """The "Changes from demo-v1" bullet points, derived from the change records."""
    v1 = {q.query_id: q for q in QUERIES_V1}
    new_queries = QUERIES_V2_NEW
    sessions = sorted({q.session_id for q in new_queries if q.session_id})
    new_doc_ids = ", ".join(d.doc_id for d in CORPUS_V2_NEW)
    lines = [
        f"Added {len(CORPUS_V2_NEW)} documents for the launch of Nimbus Functions: {new_doc_ids} "
        "(new cluster `serverless`; the pricing page is in `billing`).",
        f"Added {len(new_queries)} questions ({new_queries[0].query_id} to "
        f"{new_queries[-1].query_id}), mostly about Functions, including session "
        f"{', '.join(sessions)} and a near-duplicate pair (q067/q059).",
        f"Added {len(LOGS_V2_NEW)} logged interactions ({LOGS_V2_NEW[0].log_id} to "
        f"{LOGS_V2_NEW[-1].log_id}, 2026-11-17 to 2026-11-27), retrieved over the demo-v2 corpus; "
        "the demo-v1 logs are unchanged.",
        f"Added {len(JUDGE_LABELS_V2_NEW)} judge labels ({JUDGE_LABELS_V2_NEW[0].label_id} to "
        f"{JUDGE_LABELS_V2_NEW[-1].label_id}).",
        "The production BM25 run was re-logged for all questions over the demo-v2 corpus.",
        "Corrected relevance labels:",
    ]
    for c in QREL_CHANGES_V2:
        old = v1[c.query_id].qrels.get(c.doc_id)
        before = "not judged" if old is None else str(old)
        lines.append(f"  - {c.query_id} / {c.doc_id}: {before} → {c.relevance} ({c.reason}).")
    lines.append("Corrected ground-truth answers:")
    lines.extend(f"  - {c.query_id}: {c.reason}." for c in ANSWER_CHANGES_V2)
    lines.append("Corrected judge labels:")
    v1_labels = {j.label_id: j for j in JUDGE_LABELS_V1}
    for c in JUDGE_CHANGES_V2:
        old = "yes" if v1_labels[c.label_id].show else "no"
        new = "yes" if c.show else "no"
        lines.append(f"  - {c.label_id}: ground_truth_show {old} → {new} ({c.reason}).")
    return lines


def build_versions() -> list[Version]:
    """Assemble demo-v1 and demo-v2 from the hand-written data."""
    v1_index = BM25(CORPUS_V1)
    corpus_v2 = CORPUS_V1 + CORPUS_V2_NEW
    v2_index = BM25(corpus_v2)
    v1_logs = log_rows(LOGS_V1, v1_index, CORPUS_V1)
    v1 = Version(
        name="demo-v1",
        docs=CORPUS_V1,
        queries=QUERIES_V1,
        logs=v1_logs,
        judge_labels=JUDGE_LABELS_V1,
        description=SETTINGS["descriptions"]["demo-v1"],
    )
    v2 = Version(
        name="demo-v2",
        docs=corpus_v2,
        queries=apply_v2_changes(QUERIES_V1) + QUERIES_V2_NEW,
        logs=v1_logs + log_rows(LOGS_V2_NEW, v2_index, corpus_v2),
        judge_labels=apply_judge_changes(JUDGE_LABELS_V1) + JUDGE_LABELS_V2_NEW,
        description=SETTINGS["descriptions"]["demo-v2"],
        changes=change_list(),
    )
    return [v1, v2]


def validate(version: Version) -> None:
    """Fail loudly if the hand-written data is inconsistent."""
    doc_ids = [d.doc_id for d in version.docs]
    known = set(doc_ids)
    problems: list[str] = []
    if len(known) != len(doc_ids):
        problems.append("duplicate doc ids")
    query_ids = [q.query_id for q in version.queries]
    if len(set(query_ids)) != len(query_ids):
        problems.append("duplicate query ids")
    for q in version.queries:
        unknown = set(q.qrels) - known
        if unknown:
            problems.append(f"{q.query_id}: unknown docs {sorted(unknown)}")
        if max(q.qrels.values()) < 2:
            problems.append(f"{q.query_id}: no document with relevance >= 2")
        if any(r not in (0, 1, 2, 3) for r in q.qrels.values()):
            problems.append(f"{q.query_id}: relevance outside 0..3")
    by_id = {q.query_id: q for q in version.queries}
    for dup, original in NEAR_DUPLICATES:
        if dup in by_id and by_id[dup].qrels != by_id[original].qrels:
            problems.append(f"near-duplicate {dup} judged differently from {original}")
    for row in version.logs:
        ids = [row["shown_doc_id"], *row["retrieved_doc_ids"]]
        if not set(ids) <= known:
            problems.append(f"{row['log_id']}: unknown doc ids")
    for j in version.judge_labels:
        if not set(j.context_doc_ids) <= known:
            problems.append(f"{j.label_id}: unknown context docs")
    if problems:
        raise ValueError(f"{version.name}: " + "; ".join(problems))


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def write_text(path: Path, text: str) -> None:
    """Write UTF-8 text with `\\n` line endings, creating parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """One JSON object per line, keys sorted, non-ASCII kept as is."""
    write_text(
        path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    )


def qrel_lines(queries: list[Query]) -> list[str]:
    """qrels.csv lines: per question, highest grade first."""
    lines = ["query_id,doc_id,relevance"]
    for q in queries:
        for doc_id, relevance in sorted(q.qrels.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"{q.query_id},{doc_id},{relevance}")
    return lines


def run_lines(queries: list[Query], index: BM25) -> list[str]:
    """TREC run lines `qid Q0 docid rank score tag`, top 10 per question."""
    lines = []
    for q in queries:
        for rank, (doc_id, score) in enumerate(index.search(q.question, RUN_DEPTH), start=1):
            lines.append(f"{q.query_id} Q0 {doc_id} {rank} {score:.4f} {RUN_TAG}")
    return lines


def dataset_md(version: Version, n_qrels: Counter[int]) -> str:
    """The human description of a version, with counts computed from the data."""
    clusters = Counter(d.cluster for d in version.docs)
    sessions = sorted({q.session_id for q in version.queries if q.session_id})
    n_session_turns = sum(1 for q in version.queries if q.session_id)
    n_standalone = len(version.queries) - n_session_turns
    hard = [q for q in HARD_QUERY_IDS if any(x.query_id == q for x in version.queries)]
    ids = {q.query_id for q in version.queries}
    dups = [f"{a}/{b}" for a, b in NEAR_DUPLICATES if a in ids]
    shows = Counter("yes" if j.show else "no" for j in version.judge_labels)
    in_top5 = sum(1 for r in version.logs if r["shown_doc_id"] in r["retrieved_doc_ids"])
    cluster_text = ", ".join(f"{name} {n}" for name, n in clusters.items())
    grade_text = ", ".join(f"{n_qrels[g]} × grade {g}" for g in (3, 2, 1, 0))
    first, last = version.logs[0]["timestamp"], version.logs[-1]["timestamp"]
    parts = [
        f"# {version.name}",
        "",
        version.description,
        "",
        "Nimbus Cloud is a fictional cloud provider; its products, prices and limits are invented "
        "but consistent across all files, so every answer can be checked against the corpus.",
        "Regenerate these files with `python scripts/build_demo_datasets.py`; do not edit "
        "them by hand.",
        "",
        "## Files",
        "",
        "| File | Rows | Contents |",
        "| --- | ---: | --- |",
        f"| `corpus.jsonl` | {len(version.docs)} | Help-center articles with `title`, `text` and a "
        f"topic `cluster` ({cluster_text}). |",
        f"| `queries.jsonl` | {len(version.queries)} | {n_standalone} standalone questions and "
        f"{len(sessions)} three-turn sessions ({n_session_turns} turns, `session_id` "
        f"{sessions[0]} to {sessions[-1]}), each with a 1-2 sentence `ground_truth_answer`. |",
        f"| `qrels.csv` | {sum(n_qrels.values())} | Graded judgments: {grade_text}. |",
        f"| `runs/production-bm25.trec` | {len(version.queries) * RUN_DEPTH} | Top {RUN_DEPTH} "
        "per question of the production retriever (Okapi BM25, k1=1.2, b=0.75, over title and "
        "text), in TREC run format. |",
        f"| `logs.jsonl` | {len(version.logs)} | Logged real-user interactions ({first[:10]} to "
        f"{last[:10]}) with the BM25 top {LOG_DEPTH} and the document the user opened "
        f"(`shown_doc_id`; in the retrieved list for {in_top5} of {len(version.logs)}). |",
        f"| `judge_labels.jsonl` | {len(version.judge_labels)} | Answers scored 1-5 by two "
        f"human raters, with the correct show/hide decision ({shows['yes']} show, "
        f"{shows['no']} hide). |",
        "",
        "## Notes",
        "",
        "- Relevance grades: 3 = answers the question directly, 2 = answers most of it, "
        "1 = related or partial, 0 = judged not relevant (documents a retriever is likely to "
        "confuse with the right one).",
        '- Follow-up turns of a session (e.g. "How long are they kept?") only make sense with '
        "the earlier turns; their judgments refer to the documents of the whole conversation.",
        f"- Questions that need two documents: {', '.join(hard)}.",
        f"- Near-duplicate phrasings of another question, with identical judgments and answers "
        f"(for the semantic-cache hit rate): {', '.join(dups)}.",
        "- Judge labels are a mix of faithful answers (scores 4-5), hallucinated or "
        "contradicting ones (1-2) and partially correct ones (around 3); the raters disagree "
        "by one point often and by two points occasionally.",
    ]
    if version.changes:
        parts += ["", "## Changes from demo-v1", ""]
        parts += [c if c.startswith("  - ") else f"- {c}" for c in version.changes]
    return "\n".join(parts) + "\n"


HUMAN_CRITERIA = ("faithfulness", "relevance", "correctness", "overall")


def criteria_scores(label: JudgeLabel) -> dict[str, int]:
    """`human_<criterion>_<rater>` (1-5): each rater's overall score is their single score;
    the other criteria move from it by at most one point, reproducibly per label."""
    scores = {}
    for rater, overall in (("rater_a", label.rater_a), ("rater_b", label.rater_b)):
        for criterion in HUMAN_CRITERIA:
            rng = random.Random(f"{label.label_id}-{rater}-{criterion}")
            shift = 0 if criterion == "overall" else rng.choice((-1, 0, 0, 0, 1))
            scores[f"human_{criterion}_{rater}"] = min(5, max(1, overall + shift))
    return scores


def write_version(version: Version, out_dir: Path) -> None:
    """Validate a version and write all of its files under `out_dir/<name>/`."""
    validate(version)
    folder = out_dir / version.name
    index = BM25(version.docs)
    write_jsonl(
        folder / "corpus.jsonl",
        (
            {"doc_id": d.doc_id, "title": d.title, "text": d.text, "cluster": d.cluster}
            for d in version.docs
        ),
    )
    write_jsonl(
        folder / "queries.jsonl",
        (
            {
                "query_id": q.query_id,
                "question": q.question,
                "ground_truth_answer": q.answer,
                "session_id": q.session_id,
                "turn": q.turn,
                "expected_pattern": EXPECTED_PATTERNS.get(q.query_id),
            }
            for q in version.queries
        ),
    )
    write_text(folder / "qrels.csv", "\n".join(qrel_lines(version.queries)) + "\n")
    write_text(
        folder / "runs" / f"{RUN_TAG}.trec", "\n".join(run_lines(version.queries, index)) + "\n"
    )
    write_jsonl(folder / "logs.jsonl", version.logs)
    docs = {d.doc_id: d for d in version.docs}
    write_jsonl(
        folder / "judge_labels.jsonl",
        (
            {
                "label_id": j.label_id,
                "question": j.question,
                "context": "\n\n".join(docs[d].text for d in j.context_doc_ids),
                "answer": j.answer,
                "ground_truth_show": "yes" if j.show else "no",
                "human_score_rater_a": j.rater_a,
                "human_score_rater_b": j.rater_b,
                **criteria_scores(j),
            }
            for j in version.judge_labels
        ),
    )
    grades = Counter(r for q in version.queries for r in q.qrels.values())
    write_text(folder / "DATASET.md", dataset_md(version, grades))
    write_text(folder / "dataset.yaml", MANIFESTS[version.name])


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="folder that receives demo-v1/ and demo-v2/ (default: data/datasets)",
    )
    args = parser.parse_args(argv)
    for version in build_versions():
        write_version(version, args.out)
        print(f"wrote {args.out / version.name}")


if __name__ == "__main__":
    main()
