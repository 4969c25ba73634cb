"""The one rule for a timestamp in a dataset file: a date and a time, between 2000 and 2100.

Accepted, per cell:

- ISO 8601 text with a date and a time (`2026-11-20T08:15:00Z`, `2026-11-20 08:15:00+01:00`);
  no offset means UTC. A date alone or a bare year (`2026`, which pandas reads as 2026-01-01)
  is refused: an event has a time of day;
- an epoch number (a JSON number or a cell of digits), its unit read from its size: seconds,
  milliseconds, microseconds or nanoseconds since 1970 (the four ranges that land in
  2000-2100 do not overlap). `2026` is then 33 minutes after 1970 and refused, never silently
  moved to another day;
- a timestamp value (Parquet, datetime objects).

Whatever the form, the instant must lie in [`EARLIEST`, `LATEST`) (years 2000 to 2099).
"""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pandas as pd

EARLIEST = pd.Timestamp("2000-01-01", tz="UTC")
LATEST = pd.Timestamp("2100-01-01", tz="UTC")
EARLIEST_NS, LATEST_NS = EARLIEST.value, LATEST.value
PROBLEM = (
    "a date and time in 2000-2099 (ISO 8601 with a date and a time, "
    "or epoch seconds/milliseconds/microseconds/nanoseconds)"
)
_ISO_DATE_TIME = re.compile(r"\s*[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}")
_DIGITS = re.compile(r"\s*[0-9]+(?:\.[0-9]*)?\s*")
_NS_PER_UNIT = (1_000_000_000, 1_000_000, 1_000, 1)  # seconds, ms, µs, ns


def in_range_ns(nanoseconds: int) -> bool:
    """Whether UTC nanoseconds since 1970 fall in [`EARLIEST`, `LATEST`)."""
    return EARLIEST_NS <= nanoseconds < LATEST_NS


def epoch_to_ns(number: int | float) -> int | None:
    """An epoch number as nanoseconds, its unit the one that puts it in 2000-2099 (None when
    none does); integers are converted exactly."""
    for factor in _NS_PER_UNIT:
        if EARLIEST_NS <= number * factor < LATEST_NS:
            return number * factor if isinstance(number, int) else round(number * factor)
    return None


def parse_timestamps(values: pd.Series) -> pd.Series:
    """`values` as tz-aware UTC timestamps; NaT where a present value breaks the rule (see the
    module docstring) or is missing."""
    out = pd.Series(pd.NaT, index=values.index, dtype="datetime64[ns, UTC]")
    kinds = values.map(_kind)
    text = values[kinds == "iso"].astype(str)
    if len(text):
        out.loc[text.index] = pd.to_datetime(text, utc=True, format="ISO8601", errors="coerce")
    epochs = values[kinds == "epoch"]
    nanoseconds = {i: ns for i, v in epochs.items() if (ns := _epoch_ns(v)) is not None}
    if nanoseconds:
        whole = pd.Series(list(nanoseconds.values()), index=list(nanoseconds), dtype="int64")
        out.loc[whole.index] = pd.to_datetime(whole, utc=True, unit="ns")
    stamps = values[kinds == "stamp"]
    for position, value in stamps.items():
        stamp = pd.Timestamp(value)
        out.loc[position] = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp
    return out.where((out >= EARLIEST) & (out < LATEST))


def _epoch_ns(value: object) -> int | None:
    if isinstance(value, str):
        value = float(value) if "." in value else int(value)
    return epoch_to_ns(int(value) if isinstance(value, int | np.integer) else float(value))


def _kind(value: object) -> str:
    if isinstance(value, pd.Timestamp | dt.datetime | np.datetime64):
        return "stamp"
    if isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        return "epoch" if np.isfinite(value) else "bad"
    if isinstance(value, str):
        if _ISO_DATE_TIME.match(value):
            return "iso"
        if _DIGITS.fullmatch(value):
            return "epoch"
    return "bad"
