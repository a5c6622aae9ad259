"""The dashboard's page structure, run by `app.py` (checkout) or `streamlit_app.py` (installed).

Pages are files under `gpufleet_app/views/`, addressed by absolute path so the app
runs the same from a checkout and from an installed wheel.
"""

from __future__ import annotations

import time

import streamlit as st

from gpufleet_app import data, ui
from pipelines.errors import GpufleetError


def render() -> None:
    """One script run: page config, navigation, the chosen page inside one read session."""
    # An emoji icon is drawn in the page (a data: URL); a `:material/...:` one is fetched from
    # fonts.gstatic.com, and the app must work with no route to the internet.
    st.set_page_config(page_title="gpufleet", page_icon="🖥️", layout="wide")
    navigation = st.navigation(
        [
            st.Page(ui.OVERVIEW, title="Fleet overview", icon=":material/dashboard:", default=True),
            st.Page(ui.NODES, title="Nodes", icon=":material/dns:", url_path="nodes"),
            st.Page(ui.JOBS, title="Jobs", icon=":material/work:", url_path="jobs"),
            st.Page(
                ui.ANOMALIES, title="Anomalies", icon=":material/warning:", url_path="anomalies"
            ),
            st.Page(
                ui.TELEMETRY,
                title="Fleet telemetry",
                icon=":material/grid_on:",
                url_path="telemetry",
            ),
            st.Page(
                ui.REMEDIATION, title="Remediation", icon=":material/build:", url_path="remediation"
            ),
            st.Page(
                ui.UTILISATION, title="Utilisation", icon=":material/speed:", url_path="utilisation"
            ),
        ]
    )
    started = time.perf_counter()
    with data.page_run():
        try:
            navigation.run()
        except GpufleetError as error:
            ui.show_error(error)
        ui.sidebar_status()
    # Script time of the last completed run, for the render-time benchmark (seconds).
    st.session_state["render_s"] = time.perf_counter() - started
