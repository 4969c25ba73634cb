"""The content-addressed result cache: keys follow content, entries round-trip exactly."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.storage.result_cache import ResultCache, frame_digest, result_key

pytestmark = [pytest.mark.unit]

FRAME = pd.DataFrame({"query_id": ["q1", "q2"], "score": [0.25, 1.0]})


def test_frame_digest_follows_values_order_names_and_dtypes() -> None:
    assert frame_digest(FRAME) == frame_digest(FRAME.copy())
    assert frame_digest(FRAME) != frame_digest(FRAME.assign(score=[0.25, 0.5]))
    assert frame_digest(FRAME) != frame_digest(FRAME.iloc[::-1])
    assert frame_digest(FRAME) != frame_digest(FRAME.rename(columns={"score": "value"}))
    assert frame_digest(FRAME) != frame_digest(FRAME.astype({"score": "float32"}))
    assert frame_digest(FRAME) == frame_digest(FRAME.set_axis([7, 8])), "the index is not content"


def test_frame_digest_of_unhashable_list_columns() -> None:
    lists = pd.DataFrame({"query_id": ["q1"], "doc_ids": [["d1", "d2"]]})
    assert frame_digest(lists) == frame_digest(lists.copy())
    assert frame_digest(lists) != frame_digest(lists.assign(doc_ids=[["d2", "d1"]]))


def test_result_key_covers_name_inputs_and_parameters() -> None:
    key = result_key("x", {"a": FRAME}, {"model": "m"})
    assert key == result_key("x", {"a": FRAME.copy()}, {"model": "m"})
    assert key != result_key("y", {"a": FRAME}, {"model": "m"})
    assert key != result_key("x", {"b": FRAME}, {"model": "m"})
    assert key != result_key("x", {"a": FRAME.head(1)}, {"model": "m"})
    assert key != result_key("x", {"a": FRAME}, {"model": "n"})
    assert key != result_key("x", {"a": FRAME}, {"model": "m", "file": b"..."})


def test_round_trip_and_miss(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "results")
    assert cache.get("absent") is None
    cache.put("k", FRAME)
    pd.testing.assert_frame_equal(cache.get("k"), FRAME)
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["k.parquet"], "no leftovers"
