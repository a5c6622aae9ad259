"""`.streamlit/config.toml`: the documented `streamlit run app.py` serves only on 127.0.0.1 and
sends no usage statistics, like `gpufleet app`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from testkit.streamlit_server import ROOT, streamlit_server
from tests.conftest import require


def _clean_env() -> dict[str, str]:
    # No STREAMLIT_* variable may stand in for the file.
    return {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")} | {
        "PYTHONPATH": str(ROOT)
    }


def test_streamlit_reads_the_shipped_config() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "streamlit", "config", "show"],
        cwd=ROOT,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    # The listing is TOML laid out for a terminal: read its headers and `key = value` lines.
    effective: dict[str, dict] = {}
    section: dict = {}
    for line in (raw.strip() for raw in shown.splitlines()):
        if line.startswith("[") and line.endswith("]"):
            section = effective.setdefault(line[1:-1], {})
        elif line and not line.startswith("#") and " = " in line:
            section.update(tomllib.loads(line))
    assert effective["server"]["address"] == "127.0.0.1"
    assert effective["browser"]["gatherUsageStats"] is False
    assert effective["server"]["headless"] is True


def _outbound_address() -> str | None:
    """This machine's address on its default route (a UDP connect sends nothing)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


@pytest.mark.slow
def test_streamlit_run_app_py_listens_on_loopback_only(tmp_path: Path) -> None:
    other = _outbound_address()
    require(other is not None, "a non-loopback network address")
    # Exactly the documented command (plus a free port), from the repository folder.
    with (
        streamlit_server(
            lambda port: [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.port",
                str(port),
            ],
            tmp_path / "streamlit.log",
            env=_clean_env() | {"GPUFLEET_DB": str(tmp_path / "none.duckdb")},
        ) as served,
        pytest.raises(OSError),
        socket.create_connection((other, served.port), timeout=3),
    ):
        pass
