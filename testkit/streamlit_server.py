"""A real Streamlit server on 127.0.0.1, and the headless Chromium that drives it.

`app_server(db, log)` runs `gpufleet app` on a free port; `streamlit_server(command, log)` runs any
command given the port (e.g. the documented `streamlit run app.py`). Both start it in a session of
its own (so stopping reaches `streamlit run` under `gpufleet app`), wait (bounded) for
/_stcore/health, and always stop the whole session on exit. `chromium()` launches Debian's
Chromium through playwright (imported on use: only the browser tests and the screenshots need it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser

from testkit.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Served:
    """A running server: its base URL (http://127.0.0.1:port) and its process."""

    url: str
    port: int
    process: subprocess.Popen[bytes]


def wait_until_serving(
    url: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float = STARTUP_TIMEOUT_S
) -> None:
    """Wait for the health check at `url`; raise (with the log's end) if the server dies or times out."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"streamlit did not start; {log}:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the process's whole session: SIGTERM, then SIGKILL if it is still there."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT_S)


@contextmanager
def streamlit_server(
    command: Callable[[int], list[str]],
    log: Path,
    env: Mapping[str, str] | None = None,
    timeout_s: float = STARTUP_TIMEOUT_S,
) -> Iterator[Served]:
    """Run `command(port)` from the repository folder on a free port, its output in `log`."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    environment = dict(env) if env is not None else {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("w") as out:
        process = subprocess.Popen(
            command(port),
            cwd=ROOT,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_until_serving(url, process, log, timeout_s)
            yield Served(url, port, process)
        finally:
            stop(process)


def app_server(db: Path, log: Path) -> AbstractContextManager[Served]:
    """`gpufleet app` over the database `db`."""
    return streamlit_server(
        lambda port: [
            sys.executable,
            "-m",
            "pipelines",
            "--db",
            str(db),
            "app",
            "--port",
            str(port),
        ],
        log,
    )


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's headless Chromium (a playwright Browser); always closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
