"""Numbers in string columns (TREC runs and qrels): Arrow's fast cast against `pd.to_numeric`."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.datasets.validation import _coerce_number, _parsed_strings

pytestmark = [pytest.mark.unit]

NUMBER_TEXT = st.one_of(
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(-1e6, 1e6).map(lambda x: f"{x:.6f}"),
    st.floats(-1e6, 1e6).map(lambda x: f"{x:.17g}"),
    st.integers(-(2**60), 2**60).map(str),
    st.sampled_from(["inf", "-inf", "nan", "1e400", " 2.5", "3 ", "0x10", "+3", "-0", ".5", "5."]),
    st.sampled_from(["1_000", "1,5", "abc", "9007199254740993", "2.2250738585072011e-308"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(NUMBER_TEXT, min_size=1, max_size=30), st.booleans())
def test_fast_cast_gives_what_pd_to_numeric_gives(strings: list[str | None], integer: bool) -> None:
    values = pd.Series(strings, dtype="str")
    missing = values.isna().to_numpy()
    fast, fast_bad = _coerce_number(values, missing, integer)
    slow, slow_bad = _coerce_number(values.astype(object), missing, integer)
    np.testing.assert_array_equal(fast_bad, slow_bad)
    if not fast_bad.any():
        pd.testing.assert_series_equal(fast, slow)


def test_cast_rounds_like_python_float_on_a_million_scores() -> None:
    scores = np.random.default_rng(7).normal(scale=30.0, size=1_000_000)
    strings = [repr(float(s)) for s in scores[:500_000]] + [f"{s:.6f}" for s in scores[500_000:]]
    parsed = _parsed_strings(pd.Series(strings, dtype="str"), integer=False)
    assert parsed is not None
    np.testing.assert_array_equal(parsed.to_numpy(), np.array([float(s) for s in strings]))


def test_values_arrow_cannot_take_fall_back_to_the_reporting_path() -> None:
    for text in (" 2.5", "0x10", "1,5"):
        assert _parsed_strings(pd.Series(["1", text], dtype="str"), integer=False) is None
    assert _parsed_strings(pd.Series(["9007199254740993"], dtype="str"), integer=True) is None
    assert _parsed_strings(pd.Series([1.5, 2.0]), integer=False) is None
    values = pd.Series(["1", "0x10", None], dtype="str")
    numeric, bad = _coerce_number(values, values.isna().to_numpy(), integer=True)
    assert bad.tolist() == [False, True, False]
    assert numeric[0] == 1
