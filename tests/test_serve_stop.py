"""Stopping `gpufleet app` / `gpufleet demo` stops the Streamlit server it started: a real process
serving a real port, stopped the ways an operator stops it (Ctrl+C, `kill`, a service manager)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from testkit.ports import free_port
from tests.report_fixture import computed_fixture

ROOT = Path(__file__).resolve().parent.parent


def serving(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def wait_until(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.25)
    return predicate()


def start(args: list[str], cwd: Path, *, stderr=subprocess.DEVNULL) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # As from a terminal: a test runner started in the background may hand down SIGINT ignored,
    # and one started under `nohup` SIGHUP, so the command starts with Python's own Ctrl+C
    # handler and the default SIGHUP action in place (gpufleet keeps an ignored signal ignored).
    launcher = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "signal.signal(signal.SIGHUP, signal.SIG_DFL); "
        "sys.argv = ['gpufleet', *sys.argv[1:]]; runpy.run_module('pipelines', run_name='__main__')"
    )
    return subprocess.Popen(
        [sys.executable, "-c", launcher, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
        start_new_session=True,
    )


def children(pid: int) -> list[int]:
    """Process ids whose parent is `pid` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def stop_and_check(
    proc: subprocess.Popen[str], port: int, sig: signal.Signals, startup_s: float
) -> None:
    servers: list[int] = []
    try:
        assert wait_until(lambda: serving(port) or proc.poll() is not None, startup_s)
        assert serving(port), f"the dashboard never served port {port} (exit {proc.poll()})"
        servers = children(proc.pid)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        # The server went with it: the port stops answering (Streamlit shuts down within seconds).
        assert wait_until(lambda: not serving(port), 20), (
            f"port {port} still served after {sig.name}"
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        # A server left behind by a failing run must not outlive the test: stop it by its id
        # (checked to still be that server, not a process that reused the id).
        for pid in servers:
            try:
                if str(port).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_stopping_gpufleet_app_stops_its_server(tmp_path, sig):
    db = computed_fixture(tmp_path / "fleet.duckdb")
    port = free_port()
    proc = start(["--db", str(db), "app", "--port", str(port)], tmp_path)
    stop_and_check(proc, port, sig, startup_s=90)
    assert proc.returncode != 0


def test_stopping_gpufleet_demo_stops_its_server(tmp_path):
    port = free_port()
    proc = start(
        [
            "--db",
            str(tmp_path / "fleet.duckdb"),
            "demo",
            "--nodes",
            "1",
            "--days",
            "1",
            "--data",
            str(tmp_path / "demo-data"),
            "--port",
            str(port),
        ],
        tmp_path,
    )
    stop_and_check(proc, port, signal.SIGTERM, startup_s=300)


def test_a_signal_to_the_whole_process_group_stops_quietly(tmp_path):
    # `make demo` stopped from a terminal, or a service manager stopping the unit, signals every
    # process of the group: the server exits on its own while gpufleet handles the same signal.
    db = computed_fixture(tmp_path / "fleet.duckdb")
    port = free_port()
    errors = tmp_path / "stderr.txt"
    with open(errors, "w") as stderr:
        proc = start(["--db", str(db), "app", "--port", str(port)], tmp_path, stderr=stderr)
        try:
            assert wait_until(lambda: serving(port) or proc.poll() is not None, 90)
            assert serving(port)
            os.killpg(proc.pid, signal.SIGTERM)
            assert proc.wait(timeout=30) == 128 + signal.SIGTERM
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
    assert "Traceback" not in errors.read_text(), errors.read_text()
