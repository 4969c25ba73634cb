"""The version of every prompt the LLM judge and the LLM generator send, and what they share.

The prompts themselves live with their metrics, one module each in
`rag_eval_pipeline.judges.metrics` (all listed in `judges.metrics.PROMPTS`).

Change any template ⇒ bump `PROMPT_VERSION`: judgments record it next to every score, so scores
from different prompt versions are never compared silently (the client's reply cache is keyed by
the rendered prompt, so edited prompts never hit stale replies either).

Judge prompts ask for one JSON object and nothing else; the schema of each reply is spelled out
in the prompt, declared as the metric's pydantic `reply` model (its JSON Schema is sent as the
request's `response_format` where the provider enforces one) and read back by the metric's
`interpret`:

| prompt                    | reply                                                     |
|---------------------------|-----------------------------------------------------------|
| faithfulness              | {"claims": [{"claim": str, "supported": bool}]}           |
| answer_relevance          | {"score": float in [0, 1], "reason": str}                 |
| coherence                 | {"score": int in [1, 5], "reason": str}                   |
| answer_relevance_ragas    | {"questions": [str, ...], "noncommittal": bool}           |
| e2e_score                 | {"score": float in [0, 1], "reason": str}                 |
| context_precision         | {"verdicts": [1 | 0, ...]} one per numbered chunk         |
| context_recall            | {"claims": [{"claim": str, "attributed": bool}]}          |
| answer_correctness        | {"TP": [str], "FP": [str], "FN": [str]}                   |

The generator prompt (`rag_eval_pipeline.systems.generators.GENERATOR`) is versioned with them.
Every field is XML-escaped and every system message ends with `DATA_NOT_INSTRUCTIONS`
(`rag_eval_pipeline.llm.prompts`), so dataset texts cannot break out of their place.
"""

from __future__ import annotations

PROMPT_VERSION = "judge-prompts-v2"

JSON_ONLY = (
    "Reply with a single JSON object and nothing else: no markdown fences, no text before or "
    "after it."
)
