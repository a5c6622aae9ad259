"""Compare two databases table by table: the same rows, floats to 1e-9.

DuckDB sums in parallel, so the same floats added in another order differ in the last
bits; everything else must match exactly. Rows are compared as sorted lists, so a row
that appears twice in one table and once in the other is a difference.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import duckdb


def table_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    ignore: Iterable[str] = (),
    where: str = "true",
    params: dict[str, object] | None = None,
) -> list[tuple]:
    """The rows of `table` that match `where` (with named `params`), columns in name order
    (minus `ignore`), sorted."""
    columns = sorted(d[0] for d in con.execute(f'SELECT * FROM "{table}" LIMIT 0').description)
    kept = [c for c in columns if c not in set(ignore)]
    select = ", ".join(f'"{c}"' for c in kept)
    rows = con.execute(f'SELECT {select} FROM "{table}" WHERE {where}', params or {}).fetchall()
    return sorted(rows, key=_sort_key)


def _sort_key(row: tuple) -> tuple:
    # Floats rounded for ordering only (so 1e-12 noise cannot reorder rows); compared exactly below.
    return tuple((v is None, str(round(v, 6)) if isinstance(v, float) else str(v)) for v in row)


def same_value(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return a == b


def table_differences(
    left: duckdb.DuckDBPyConnection,
    right: duckdb.DuckDBPyConnection,
    table: str,
    ignore: Iterable[str] = (),
) -> str | None:
    """None when `table` holds the same rows in both; else a short description of the first difference."""
    return rows_difference(table_rows(left, table, ignore), table_rows(right, table, ignore), table)


def rows_difference(a: list[tuple], b: list[tuple], what: str) -> str | None:
    """None when the sorted rows `a` and `b` are the same (floats to 1e-9); else the first difference."""
    if len(a) != len(b):
        extra_a = [r for r in a if r not in b][:3]
        extra_b = [r for r in b if r not in a][:3]
        return (
            f"{what}: {len(a)} rows against {len(b)}; only left: {extra_a}; only right: {extra_b}"
        )
    for x, y in zip(a, b, strict=True):
        if not same_value(x, y):
            return f"{what}: {x} against {y}"
    return None
