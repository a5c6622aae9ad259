"""A real Prometheus server over backfilled landing data, for tests and the benchmark.

Landing frames → OpenMetrics text → `promtool tsdb create-blocks-from openmetrics` →
`prometheus` on 127.0.0.1 (free port, its own storage dir, bounded startup wait).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import requests

from pipelines.sources.openmetrics import write_openmetrics

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
STARTUP_TIMEOUT_S = 60.0


def available() -> bool:
    return Path(PROMETHEUS).is_file() and Path(PROMTOOL).is_file()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def backfill(frames: dict[str, pl.DataFrame], storage: Path, host_label: str = "Hostname") -> int:
    """Write `frames` as TSDB blocks into `storage`; return the number of samples written."""
    storage.mkdir(parents=True, exist_ok=True)
    text = storage.parent / f"{storage.name}.om.txt"
    samples = write_openmetrics(frames, text, host_label)
    # A week in hours: promtool 2.x reads a Go duration, which has no `d` unit.
    subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=168h", str(text), str(storage)],
        check=True, capture_output=True, timeout=600 + samples // 20_000,
    )
    text.unlink()
    return samples


@dataclass
class Server:
    url: str
    process: subprocess.Popen

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@contextmanager
def prometheus_server(storage: Path) -> Iterator[Server]:
    """Serve the TSDB in `storage`; always stopped on exit."""
    config = storage.parent / f"{storage.name}.yml"
    config.write_text("global:\n  scrape_interval: 30s\nscrape_configs: []\n")
    port = free_port()
    log = open(storage.parent / f"{storage.name}.log", "w")  # noqa: SIM115 (closed in finally)
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={storage}",
            f"--web.listen-address=127.0.0.1:{port}",
            # Backfilled data is older than the default 15 days retention may allow.
            "--storage.tsdb.retention.time=100y",
            "--query.lookback-delta=5m",
            "--query.max-samples=200000000",
        ],
        stdout=log, stderr=subprocess.STDOUT,
    )
    server = Server(f"http://127.0.0.1:{port}", process)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(storage.parent / f'{storage.name}.log').read_text()[-2000:]}")
            try:
                if requests.get(f"{server.url}/-/ready", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("prometheus did not become ready in time")
            time.sleep(0.2)
        yield server
    finally:
        server.stop()
        log.close()
