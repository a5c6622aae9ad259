"""gpufleet dashboard: `streamlit run app.py` (or `gpufleet app`).

The database comes from GPUFLEET_DB (default fleet.duckdb) and is opened read-only.
"""

from gpufleet_app.entry import render

render()
