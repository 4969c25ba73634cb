"""Parsing a judge reply is its reply model's validation: a small repair (strings stripped), then
`model_validate`; the first field that breaks the model is named in `InvalidReplyError`."""

import pytest

from rag_eval_pipeline.judges.metrics import answer_relevance_ragas, context_precision, faithfulness
from rag_eval_pipeline.judges.replies import InvalidReplyError, YesNoReply, read

pytestmark = [pytest.mark.unit]


@pytest.mark.parametrize(
    ("supported", "expected"),
    [(True, True), (" Yes ", True), ("NO", False), (1, True), ("0", False), ("false", False)],
)
def test_verdict_words_and_numbers_are_booleans(supported: object, expected: bool) -> None:
    reply = read(faithfulness.Reply, {"claims": [{"claim": " A ", "supported": supported}]})
    assert reply.claims[0].supported is expected and reply.claims[0].claim == "A"


def test_flags_and_yes_no_verdicts_accept_the_same_words() -> None:
    flags = read(context_precision.Reply, {"verdicts": [1, "0", True, " yes ", "No"]})
    assert flags.verdicts == [1, 0, 1, 1, 0]
    assert read(YesNoReply, {"verdict": " TRUE "}).verdict == "yes"
    assert read(YesNoReply, {"verdict": 0, "reason": " r "}).model_dump() == {
        "verdict": "no",
        "reason": "r",
    }


@pytest.mark.parametrize(
    ("model", "payload", "message"),
    [
        (
            faithfulness.Reply,
            {"claims": [{"claim": "A", "supported": "maybe"}]},
            "supported must be true or false, got 'maybe'",
        ),
        (faithfulness.Reply, {"claims": ["A"]}, "claims.0: Input should be a valid dictionary"),
        (context_precision.Reply, {"verdicts": [2]}, "verdicts must be 1 or 0, got '2'"),
        (YesNoReply, {"verdict": "perhaps"}, "verdict must be yes or no, got 'perhaps'"),
        (YesNoReply, {"reason": "r"}, "missing key 'verdict'"),
        (
            answer_relevance_ragas.Reply,
            {"questions": ["ok", " "]},
            "questions must be non-empty strings",
        ),
    ],
)
def test_a_reply_breaking_its_model_names_the_field(
    model: type, payload: dict, message: str
) -> None:
    with pytest.raises(InvalidReplyError) as raised:
        read(model, payload)
    assert str(raised.value).startswith(message)


def test_an_echoed_value_is_capped() -> None:
    with pytest.raises(InvalidReplyError) as raised:
        read(faithfulness.Reply, {"claims": [{"claim": "A", "supported": "x" * 10_000}]})
    assert len(str(raised.value)) < 300 and "10,000 characters" in str(raised.value)
