"""Every prompt the LLM judge and the LLM generator send, versioned as one set.

Change any template ⇒ bump `PROMPT_VERSION`: judgments record it next to every score, so scores
from different prompt versions are never compared silently (the client's reply cache is keyed by
the rendered prompt, so edited prompts never hit stale replies either).

Judge prompts ask for one JSON object and nothing else; the schema of each reply is spelled out
in the prompt and read back by `rag_eval_pipeline.judges.judge`:

| prompt                    | reply                                                     |
|---------------------------|-----------------------------------------------------------|
| faithfulness              | {"claims": [{"claim": str, "supported": bool}]}           |
| answer_relevance          | {"score": float in [0, 1], "reason": str}                 |
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

from collections.abc import Sequence

from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate, format_contexts
from rag_eval_pipeline.systems.generators import GENERATOR

PROMPT_VERSION = "judge-prompts-v2"

_JSON_ONLY = (
    "Reply with a single JSON object and nothing else: no markdown fences, no text before or "
    "after it."
)

FAITHFULNESS = PromptTemplate(
    name="faithfulness",
    system=(
        "You verify whether an answer is grounded in the given context.\n"
        "1. Break the answer into atomic, self-contained factual claims (replace pronouns by what "
        "they refer to; one fact per claim; ignore citation markers such as [2]).\n"
        "2. For each claim decide whether it can be directly inferred from the context alone. "
        "Outside knowledge does not count: a true claim absent from the context is not supported.\n"
        "If the answer makes no factual claim (for example it only says it does not know), "
        'return {"claims": []}.\n'
        'Schema: {"claims": [{"claim": "<claim>", "supported": true or false}]}\n' + _JSON_ONLY
    ),
    user=(
        "<question>\n$question\n</question>\n\n<context>\n$context\n</context>\n\n"
        "<answer>\n$answer\n</answer>"
    ),
)

ANSWER_RELEVANCE = PromptTemplate(
    name="answer_relevance",
    system=(
        "You rate how relevant an answer is to a question, regardless of whether it is correct.\n"
        "Score from 0 to 1:\n"
        "1.0 = addresses the question directly and completely, nothing off-topic;\n"
        "0.7 = addresses the question but is incomplete or padded with unrelated content;\n"
        "0.3 = only touches the topic of the question;\n"
        "0.0 = off-topic, evasive or a refusal such as 'I don't know'.\n"
        'Schema: {"score": <number between 0 and 1>, "reason": "<one sentence>"}\n' + _JSON_ONLY
    ),
    user="<question>\n$question\n</question>\n\n<answer>\n$answer\n</answer>",
)

COHERENCE = PromptTemplate(
    name="coherence",
    system=(
        "You rate the coherence of an answer: its logical flow, whether each sentence follows "
        "from the previous ones and the whole reads as one organized response, regardless of "
        "whether it is correct.\n"
        "Score from 1 to 5:\n"
        "5 = well organized, every sentence builds on the previous ones;\n"
        "4 = clear, with a minor jump or repetition;\n"
        "3 = understandable but loosely connected or partly repetitive;\n"
        "2 = hard to follow, sentences contradict or ignore each other;\n"
        "1 = incoherent: fragments without a logical thread.\n"
        'Schema: {"score": <integer from 1 to 5>, "reason": "<one sentence>"}\n' + _JSON_ONLY
    ),
    user="<question>\n$question\n</question>\n\n<answer>\n$answer\n</answer>",
)

ANSWER_RELEVANCE_RAGAS = PromptTemplate(
    name="answer_relevance_ragas",
    system=(
        "Given an answer, write $n different questions that this answer answers, each one "
        "standalone and in the language of the answer.\n"
        "Also say whether the answer is noncommittal: evasive, vague or a refusal such as "
        "'I don't know' or 'I'm not sure'.\n"
        'Schema: {"questions": ["<question>", ...], "noncommittal": true or false}\n' + _JSON_ONLY
    ),
    user="<answer>\n$answer\n</answer>",
)

E2E_SCORE = PromptTemplate(
    name="e2e_score",
    system=(
        "You grade how useful an answer is to the person who asked the question, using the "
        "ground-truth answer as the reference.\n"
        "Score from 0 to 1:\n"
        "1.0 = conveys all essential information of the ground truth, nothing contradicts it;\n"
        "0.7 = mostly right, misses a minor point or adds harmless noise;\n"
        "0.3 = partly right, misses essential information;\n"
        "0.0 = wrong, contradicts the ground truth, or does not answer.\n"
        "Judge substance, not wording or length.\n"
        'Schema: {"score": <number between 0 and 1>, "reason": "<one sentence>"}\n' + _JSON_ONLY
    ),
    user=(
        "<question>\n$question\n</question>\n\n<ground_truth>\n$ground_truth\n</ground_truth>\n\n"
        "<answer>\n$answer\n</answer>"
    ),
)

CONTEXT_PRECISION = PromptTemplate(
    name="context_precision",
    system=(
        "You judge retrieved context chunks. For each numbered chunk, in order, decide whether it "
        "was useful in arriving at the ground-truth answer to the question: 1 if useful, 0 if "
        "not.\n"
        "Return exactly $n_chunks verdicts, the i-th for chunk [i].\n"
        'Schema: {"verdicts": [1 or 0, ...]}\n' + _JSON_ONLY
    ),
    user=(
        "<question>\n$question\n</question>\n\n<ground_truth>\n$ground_truth\n</ground_truth>\n\n"
        "<context>\n$context\n</context>"
    ),
)

CONTEXT_RECALL = PromptTemplate(
    name="context_recall",
    system=(
        "You check how much of a ground-truth answer the retrieved context covers.\n"
        "1. Break the ground truth into atomic, self-contained claims.\n"
        "2. For each claim decide whether it can be attributed to the context, that is whether "
        "the context states or directly implies it.\n"
        'Schema: {"claims": [{"claim": "<claim>", "attributed": true or false}]}\n' + _JSON_ONLY
    ),
    user="<context>\n$context\n</context>\n\n<ground_truth>\n$ground_truth\n</ground_truth>",
)

ANSWER_CORRECTNESS = PromptTemplate(
    name="answer_correctness",
    system=(
        "You compare an answer with a ground-truth answer.\n"
        "Break both into atomic, self-contained statements, then classify:\n"
        "TP: statements of the answer that the ground truth supports;\n"
        "FP: statements of the answer that the ground truth does not support;\n"
        "FN: statements of the ground truth that the answer misses.\n"
        "Every answer statement goes to TP or FP, every missed ground-truth statement to FN.\n"
        'Schema: {"TP": ["<statement>", ...], "FP": [...], "FN": [...]}\n' + _JSON_ONLY
    ),
    user="<ground_truth>\n$ground_truth\n</ground_truth>\n\n<answer>\n$answer\n</answer>",
)

PROMPTS: dict[str, PromptTemplate] = {
    template.name: template
    for template in (
        FAITHFULNESS,
        ANSWER_RELEVANCE,
        COHERENCE,
        ANSWER_RELEVANCE_RAGAS,
        E2E_SCORE,
        CONTEXT_PRECISION,
        CONTEXT_RECALL,
        ANSWER_CORRECTNESS,
        GENERATOR,
    )
}


def faithfulness_prompt(question: str, contexts: Sequence[str], answer: str) -> Messages:
    """Claim extraction and verification against the context in one reply."""
    return FAITHFULNESS.render(question=question, context=format_contexts(contexts), answer=answer)


def answer_relevance_prompt(question: str, answer: str) -> Messages:
    """A 0–1 rubric score for how directly the answer addresses the question."""
    return ANSWER_RELEVANCE.render(question=question, answer=answer)


def coherence_prompt(question: str, answer: str) -> Messages:
    """A 1–5 rating of the answer's logical flow (scaled to 0–1 by the judge)."""
    return COHERENCE.render(question=question, answer=answer)


def answer_relevance_ragas_prompt(answer: str, n: int) -> Messages:
    """`n` questions generated back from the answer, plus the noncommittal flag (RAGAS)."""
    return ANSWER_RELEVANCE_RAGAS.render(answer=answer, n=str(n))


def e2e_score_prompt(question: str, answer: str, ground_truth: str) -> Messages:
    """A 0–1 usefulness score of the answer against the ground-truth answer."""
    return E2E_SCORE.render(question=question, answer=answer, ground_truth=ground_truth)


def context_precision_prompt(question: str, contexts: Sequence[str], ground_truth: str) -> Messages:
    """One relevance verdict per ranked chunk, in rank order."""
    return CONTEXT_PRECISION.render(
        question=question,
        ground_truth=ground_truth,
        context=format_contexts(contexts),
        n_chunks=str(len(contexts)),
    )


def context_recall_prompt(contexts: Sequence[str], ground_truth: str) -> Messages:
    """Ground-truth claims, each marked attributable to the context or not."""
    return CONTEXT_RECALL.render(context=format_contexts(contexts), ground_truth=ground_truth)


def answer_correctness_prompt(answer: str, ground_truth: str) -> Messages:
    """Answer and ground-truth statements classified TP / FP / FN."""
    return ANSWER_CORRECTNESS.render(answer=answer, ground_truth=ground_truth)
