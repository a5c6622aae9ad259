"""A real Prometheus server over backfilled landing data, for tests and the benchmark.

Landing frames → OpenMetrics text → `promtool tsdb create-blocks-from openmetrics` →
`prometheus` on 127.0.0.1 (free port, its own storage dir, bounded startup wait), over
plain HTTP or over HTTPS with a throwaway CA made by the `openssl` command.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import requests

from pipelines.sources.openmetrics import write_openmetrics
from testkit.ports import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"
STARTUP_TIMEOUT_S = 60.0


def available() -> bool:
    return Path(PROMETHEUS).is_file() and Path(PROMTOOL).is_file()


def backfill(frames: dict[str, pl.DataFrame], storage: Path, host_label: str = "Hostname") -> int:
    """Write `frames` as TSDB blocks into `storage`; return the number of samples written."""
    storage.mkdir(parents=True, exist_ok=True)
    text = storage.parent / f"{storage.name}.om.txt"
    samples = write_openmetrics(frames, text, host_label)
    # A week in hours: promtool 2.x reads a Go duration, which has no `d` unit.
    create_blocks(text, storage, timeout_s=600 + samples // 20_000, max_block_duration="168h")
    text.unlink()
    return samples


def create_blocks(
    text: Path, storage: Path, timeout_s: float = 120, max_block_duration: str | None = None
) -> None:
    """TSDB blocks in `storage` from the OpenMetrics file `text` (`promtool tsdb create-blocks-from`)."""
    duration = [f"--max-block-duration={max_block_duration}"] if max_block_duration else []
    subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", *duration, str(text), str(storage)],
        check=True,
        capture_output=True,
        timeout=timeout_s,
    )


@dataclass(frozen=True)
class Certificates:
    """PEM files: a CA, and a certificate for 127.0.0.1 it signed (with its key)."""

    ca_cert: Path
    server_cert: Path
    server_key: Path


_OPENSSL_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = gpufleet test CA
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


def make_certificates(directory: Path) -> Certificates:
    """A new CA (valid 2 days) and a server certificate for 127.0.0.1 signed by it, in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "openssl.cnf"
    config.write_text(_OPENSSL_CONFIG)
    files = Certificates(directory / "ca.crt", directory / "server.crt", directory / "server.key")
    ca_key, request = directory / "ca.key", directory / "server.csr"
    new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for args in (
        [
            "req",
            "-x509",
            "-config",
            config,
            "-extensions",
            "ca",
            *new_key,
            "-keyout",
            ca_key,
            "-out",
            files.ca_cert,
            "-days",
            "2",
        ],
        [
            "req",
            "-new",
            "-config",
            config,
            *new_key,
            "-keyout",
            files.server_key,
            "-out",
            request,
            "-subj",
            "/CN=127.0.0.1",
        ],
        [
            "x509",
            "-req",
            "-in",
            request,
            "-CA",
            files.ca_cert,
            "-CAkey",
            ca_key,
            "-set_serial",
            "1",
            "-days",
            "2",
            "-extfile",
            config,
            "-extensions",
            "server",
            "-out",
            files.server_cert,
        ],
    ):
        subprocess.run([OPENSSL, *map(str, args)], check=True, capture_output=True, timeout=60)
    return files


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
def prometheus_server(storage: Path, tls: Certificates | None = None) -> Iterator[Server]:
    """Serve the TSDB in `storage` (over HTTPS with `tls`); always stopped on exit."""
    config = storage.parent / f"{storage.name}.yml"
    config.write_text("global:\n  scrape_interval: 30s\nscrape_configs: []\n")
    web = []
    if tls is not None:
        web_config = storage.parent / f"{storage.name}.web.yml"
        web_config.write_text(
            f"tls_server_config:\n  cert_file: {tls.server_cert}\n  key_file: {tls.server_key}\n"
        )
        web = [f"--web.config.file={web_config}"]
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
            *web,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    scheme = "https" if tls is not None else "http"
    server = Server(f"{scheme}://127.0.0.1:{port}", process)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"prometheus exited: {(storage.parent / f'{storage.name}.log').read_text()[-2000:]}"
                )
            try:
                ready = requests.get(
                    f"{server.url}/-/ready", timeout=1, verify=str(tls.ca_cert) if tls else True
                )
                if ready.status_code == 200:
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
