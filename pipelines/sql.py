"""The one loader for `queries/*.sql`, shared by the CLI, the app and the notebooks.

A query file is one statement with named parameters (`$start`, `$end`); it may read another
query as a subquery, `{{ app/goodput_stack }}`. Values are always bound as parameters, never
formatted into the SQL text. Only the parameters
a statement mentions are bound, so callers can pass one settings dict everywhere.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.errors import GpufleetError

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_COMMENT = re.compile(r"--[^\n]*")


def queries_dir() -> Path:
    """`queries/` beside the package in a checkout, or bundled inside a wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "queries", here / "_queries"):
        if candidate.is_dir():
            return candidate
    raise GpufleetError("The `queries/` folder is missing.", "Reinstall gpufleet.")


_INCLUDE = re.compile(r"\{\{\s*([\w/]+)\s*\}\}")
"""`{{ app/goodput_stack }}` in a query: that query, as a subquery (one definition, read twice)."""


@functools.cache
def load_sql(name: str) -> str:
    """The text of `queries/<name>.sql` (`name` may contain a subfolder: `derived/jobs`), each
    `{{ other/query }}` in it replaced by that query in parentheses."""
    return _load_sql(name, ())


def _load_sql(name: str, including: tuple[str, ...]) -> str:
    if name in including:
        raise GpufleetError(f"Query `{name}` includes itself ({' -> '.join((*including, name))}).")
    path = queries_dir() / f"{name}.sql"
    if not path.is_file():
        raise GpufleetError(f"Query `{name}` does not exist ({path}).")
    return _INCLUDE.sub(
        lambda m: "(\n" + _load_sql(m.group(1), (*including, name)) + "\n)", path.read_text()
    )


def quote_ident(name: str) -> str:
    """An identifier (table, column) for SQL built from names: the one place they are escaped."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    """A string constant for SQL that cannot bind parameters (a view's text, a default value):
    the one place values are escaped. Everywhere else values are bound."""
    return "'" + value.replace("'", "''") + "'"


def param_names(sql: str) -> set[str]:
    """Named parameters a statement uses, ignoring `--` comments."""
    return set(_PARAM.findall(_COMMENT.sub("", sql)))


BUNDLED_DATA: dict[str, str] = {"weekly_metrics": "weekly_metrics.csv"}
"""Reference files under `queries/data/` that queries read by path, by parameter name
(`$weekly_metrics`): bound to the bundled file unless the caller passes another, so every caller
(the report, the notebooks) reads the same catalogue without knowing where it lives."""


def data_path(file_name: str) -> str:
    """The path of a bundled reference file, `queries/data/<file_name>`."""
    return str(queries_dir() / "data" / file_name)


def bind(sql: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """The subset of `params` the statement uses (with BUNDLED_DATA's paths unless given); a
    missing one is an error."""
    wanted = param_names(sql)
    bundled = {name: data_path(file) for name, file in BUNDLED_DATA.items() if name in wanted}
    params = {**bundled, **(params or {})}
    missing = sorted(wanted - params.keys())
    if missing:
        raise GpufleetError(f"Query needs parameter `${missing[0]}`, which was not given.")
    return {k: params[k] for k in wanted}


def execute(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """Run `queries/<name>.sql` with its named parameters bound."""
    sql = load_sql(name)
    return con.execute(sql, bind(sql, params))


def query_pl(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None
) -> pl.DataFrame:
    """Run `queries/<name>.sql` and return a polars DataFrame."""
    sql = load_sql(name)
    return con.sql(sql, params=bind(sql, params)).pl()


def statements(script: str) -> list[str]:
    """Split a DDL script on `;` at line ends (schema files hold no `;` in strings)."""
    body = _COMMENT.sub("", script)
    return [s.strip() for s in re.split(r";\s*\n", body + "\n") if s.strip()]


def execute_script(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None
) -> None:
    """Run each statement of `queries/<name>.sql` in order, each with the parameters it uses."""
    for statement in statements(load_sql(name)):
        con.execute(statement, bind(statement, params) or None)
