"""Statements of fixed text live in `queries/` (CONTRIBUTING.md, "Where SQL lives").

Python writes SQL only where its shape depends on names known at run time (an f-string), plus
table housekeeping (dropping or renaming a scratch table) and connection control. A plain string
literal that starts a data statement is a query that belongs in a `.sql` file.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKED = [
    *sorted((ROOT / "pipelines").rglob("*.py")),
    *sorted((ROOT / "gpufleet_app").rglob("*.py")),
]

DATA_STATEMENT = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|WITH|COPY|MERGE)\b")
HOUSEKEEPING = re.compile(
    r"(DROP (TABLE|VIEW)( IF EXISTS)? [\w.]+|ALTER TABLE \w+ RENAME TO \w+)", re.ASCII
)
PIECES_JOINED_AT_RUN_TIME = {
    # The batch's node -> cluster and job -> cluster pairs are a UNION over the landing views the
    # batch has: fixed pieces, joined by Python into one statement.
    "pipelines/cluster_resolution.py",
}


def fixed_statements(source: str) -> list[tuple[int, str]]:
    """(line, text) of each plain string literal that starts a data statement, other than
    docstrings, f-string parts and table housekeeping."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in node.values)
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            skipped.add(id(body[0].value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skipped
        and DATA_STATEMENT.match(node.value)
        and not HOUSEKEEPING.fullmatch(node.value.strip())
    ]


def test_the_check_finds_a_fixed_query_and_passes_names_built_at_run_time():
    source = '''
def look(con, table):
    """SELECT in a docstring is prose."""
    con.execute("DROP TABLE IF EXISTS __scratch")
    con.execute(f"SELECT count(*) FROM {table}")
    return con.execute("SELECT count(*) FROM nodes WHERE cluster = ?", ["a"])
'''
    assert fixed_statements(source) == [(6, "SELECT count(*) FROM nodes WHERE cluster = ?")]


def test_python_holds_no_fixed_text_query():
    assert CHECKED, "no Python files found under pipelines/ and gpufleet_app/"
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text[:70]!r}"
        for path in CHECKED
        if str(path.relative_to(ROOT)) not in PIECES_JOINED_AT_RUN_TIME
        for line, text in fixed_statements(path.read_text())
    ]
    assert not found, "Move these into queries/ (CONTRIBUTING.md):\n" + "\n".join(found)
