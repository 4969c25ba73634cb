"""The production show/hide judge: decides whether an answer is good enough to show a user.

`LLMShowJudge` asks an LLM with `SHOW_PROMPT` and parses Yes/No replies robustly ("Yes",
"yes.", "Да", JSON); an unparseable reply is an error (decision None), never a "No"; a prompt over
`llm.prompts.MAX_PROMPT_CHARS` is never sent (error `prompt too long: ...`).
`OfflineShowJudge` shows an answer when the offline judge's faithfulness is at least
`threshold`. Both return one row per item: `decision`, `raw_reply`, `error`, `latency_ms`,
`judge_model`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

import pandas as pd

from rag_eval_pipeline.embedding.embedder import loading_seconds
from rag_eval_pipeline.judges.metrics import faithfulness
from rag_eval_pipeline.judges.offline import OfflineJudge
from rag_eval_pipeline.llm.client import LLMClient
from rag_eval_pipeline.llm.prompts import PromptTemplate, oversized
from rag_eval_pipeline.metrics.classification import parse_yes_no

SHOW_PROMPT = PromptTemplate(
    name="show_answer",
    system=(
        "You are the quality gate of a question-answering product. Decide whether the answer "
        "may be shown to the user: show it only if it answers the question and every claim in it "
        "is supported by the context. Reply with exactly one word: Yes or No."
    ),
    user=(
        "<question>\n$question\n</question>\n\n<context>\n$context\n</context>\n\n"
        "<answer>\n$answer\n</answer>"
    ),
)
DECISION_COLUMNS = ["decision", "raw_reply", "error", "latency_ms", "judge_model"]


class ShowJudge(Protocol):
    """Decides show (True) or hide (False) per item; None with an error when undecidable."""

    def decide(
        self, questions: Sequence[str], contexts: Sequence[str], answers: Sequence[str]
    ) -> pd.DataFrame: ...


class LLMShowJudge:
    """The show/hide decision asked of an LLM."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    def decide(
        self, questions: Sequence[str], contexts: Sequence[str], answers: Sequence[str]
    ) -> pd.DataFrame:
        prompts = [
            SHOW_PROMPT.render(question=q, context=c, answer=a)
            for q, c, a in zip(questions, contexts, answers, strict=True)
        ]
        too_long = [oversized(prompt) for prompt in prompts]
        sent = [prompt for prompt, problem in zip(prompts, too_long, strict=True) if not problem]
        replies = iter(self.client.complete_many(sent) if sent else [])
        model = self.client.config.model
        rows = []
        for problem in too_long:
            if problem:
                rows.append(
                    dict(zip(DECISION_COLUMNS, (None, None, problem, 0.0, model), strict=True))
                )
                continue
            reply = next(replies)
            decision = None if reply.text is None else parse_yes_no(reply.text)
            error = reply.error or (None if decision is not None else "unparseable reply")
            values = (decision, reply.text, error, reply.latency_ms, reply.model or model)
            rows.append(dict(zip(DECISION_COLUMNS, values, strict=True)))
        return pd.DataFrame(rows, columns=DECISION_COLUMNS)


class OfflineShowJudge:
    """Show when the offline faithfulness of the answer to its context is ≥ `threshold`."""

    def __init__(self, judge: OfflineJudge, threshold: float = 0.5) -> None:
        self.judge = judge
        self.threshold = threshold

    def decide(
        self, questions: Sequence[str], contexts: Sequence[str], answers: Sequence[str]
    ) -> pd.DataFrame:
        start, loading = time.perf_counter(), loading_seconds()
        items = {"question": questions, "contexts": [[c] for c in contexts], "answer": answers}
        scored = self.judge.score(faithfulness.METRIC, items)
        elapsed = time.perf_counter() - start - (loading_seconds() - loading)  # not the model load
        latency = elapsed * 1000 / max(len(scored), 1)
        decision = [None if pd.isna(s) else bool(s >= self.threshold) for s in scored["score"]]
        no_claims = scored["error"].eq("no claims").to_numpy()
        decision = [False if empty else d for d, empty in zip(decision, no_claims, strict=True)]
        return pd.DataFrame(
            {
                "decision": decision,
                "raw_reply": scored["raw_reply"].to_numpy(),
                "error": [
                    None if d is not None else e
                    for d, e in zip(decision, scored["error"], strict=True)
                ],
                "latency_ms": latency,
                "judge_model": f"{self.judge.judge_model} (faithfulness ≥ {self.threshold})",
            }
        )[DECISION_COLUMNS]
