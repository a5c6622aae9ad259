"""gpufleet dashboard entry point: `streamlit run app.py` (or `gpufleet app`).

The database comes from GPUFLEET_DB (default fleet.duckdb) and is opened read-only.
"""

import streamlit as st

from gpufleet_app import data, ui
from pipelines.errors import GpufleetError

st.set_page_config(page_title="gpufleet", page_icon=":material/memory:", layout="wide")

navigation = st.navigation([
    st.Page(ui.OVERVIEW, title="Fleet overview", icon=":material/dashboard:", default=True),
    st.Page(ui.NODES, title="Nodes", icon=":material/dns:", url_path="nodes"),
    st.Page(ui.JOBS, title="Jobs", icon=":material/work:", url_path="jobs"),
    st.Page(ui.ANOMALIES, title="Anomalies", icon=":material/warning:", url_path="anomalies"),
])

with data.page_run():
    try:
        navigation.run()
    except GpufleetError as error:
        ui.show_error(error)
    ui.sidebar_status()
