"""The Streamlit dashboard: fleet overview, nodes, jobs and anomalies.

Reads the DuckDB file read-only through `queries/app/*.sql`; never writes.
`pipelines/` never imports this package.
"""
