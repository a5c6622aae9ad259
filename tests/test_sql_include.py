"""A query may read another as a subquery (`{{ name }}`): one definition, read twice."""

from __future__ import annotations

import duckdb
import pytest

from pipelines import sql
from pipelines.errors import GpufleetError


@pytest.fixture
def queries(tmp_path, monkeypatch):
    monkeypatch.setattr(sql, "queries_dir", lambda: tmp_path)
    sql.load_sql.cache_clear()
    yield tmp_path
    sql.load_sql.cache_clear()


def test_an_included_query_runs_as_a_subquery_with_its_parameters(queries):
    (queries / "app").mkdir()
    (queries / "app" / "totals.sql").write_text(
        "-- the sum\nSELECT sum(x) * $scale AS total FROM t\n"
    )
    (queries / "report.sql").write_text("SELECT total + 1 AS shown FROM {{ app/totals }}\n")
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1), (2), (4)) v(x)")
    # (1 + 2 + 4) * 10 + 1 = 71; the comment inside the included file ends at its own line.
    assert sql.query_pl(con, "report", {"scale": 10})["shown"].to_list() == [71]


def test_a_query_that_includes_itself_is_refused(queries):
    (queries / "a.sql").write_text("SELECT * FROM {{ b }}\n")
    (queries / "b.sql").write_text("SELECT * FROM {{ a }}\n")
    with pytest.raises(GpufleetError, match=r"a -> b -> a"):
        sql.load_sql("a")


def test_an_include_of_a_missing_query_names_it(queries):
    (queries / "a.sql").write_text("SELECT * FROM {{ nowhere/else }}\n")
    with pytest.raises(GpufleetError, match="`nowhere/else` does not exist"):
        sql.load_sql("a")


def test_the_goodput_stack_is_summed_in_one_query():
    # The report's waterfall levels come from the dashboard's totals, not a second aggregation.
    text = (sql.queries_dir() / "report" / "goodput_stack.sql").read_text()
    assert "{{ app/goodput_stack }}" in text
    assert "sum(" not in text.lower()
