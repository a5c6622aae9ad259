"""Typed extremes of a polars Series: polars types `Series.min()` and `.max()` as any Python value
(a number, a date, a list, None, ...); these check the value is what the column holds and say so."""

from __future__ import annotations

import datetime as dt
from typing import TypeVar

import polars as pl

T = TypeVar("T")


def _checked(series: pl.Series, value: object, kind: type[T]) -> T:
    if not isinstance(value, kind):
        # An empty or all-null column gives None: the caller needed a value there.
        raise TypeError(f"column {series.name!r}: expected a {kind.__name__}, got {value!r}")
    return value


def datetime_min(series: pl.Series) -> dt.datetime:
    """The earliest instant of a datetime column."""
    return _checked(series, series.min(), dt.datetime)


def datetime_max(series: pl.Series) -> dt.datetime:
    """The latest instant of a datetime column."""
    return _checked(series, series.max(), dt.datetime)


def int_min(series: pl.Series) -> int:
    """The smallest value of an integer column."""
    return _checked(series, series.min(), int)
