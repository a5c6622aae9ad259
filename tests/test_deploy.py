"""The scheduling examples work: deploy/crontab and deploy/cronjob.yaml run for real on a small fleet.

Paths are rewritten into a temporary folder and `gpufleet` is this checkout; everything else
(flock, timeout, the shell scripts, `--week last`) runs as written.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipelines.simulate import SimulationConfig, simulate_to_dir
from pipelines.weeks import parse_week
from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def landing(tmp_path_factory) -> Path:
    # Default start: Monday of the last full ISO week, so `--week last` has data.
    folder = tmp_path_factory.mktemp("landing") / "incoming"
    simulate_to_dir(SimulationConfig.create(nodes=2, days=1, seed=5), folder)
    return folder


@pytest.fixture
def shim(tmp_path: Path) -> dict[str, str]:
    """Environment whose PATH has a `gpufleet` that runs this checkout."""
    require(
        shutil.which("flock") is not None and shutil.which("timeout") is not None,
        "flock and timeout (util-linux, coreutils)",
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gpufleet = bin_dir / "gpufleet"
    gpufleet.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pipelines "$@"\n')
    gpufleet.chmod(0o755)
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
    }


def crontab_entries(text: str) -> tuple[dict[str, str], list[tuple[list[str], str]]]:
    env, jobs = {}, []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if re.match(r"^[A-Z_]+=", line):
            key, _, value = line.partition("=")
            env[key] = value
            continue
        fields = line.split(None, 5)
        jobs.append((fields[:5], fields[5]))
    return env, jobs


def test_crontab_runs(landing, shim, tmp_path):
    env, jobs = crontab_entries((ROOT / "deploy" / "crontab").read_text())
    assert env["CRON_TZ"] == "UTC" and len(jobs) == 3
    replace = {
        "/var/spool/gpufleet/incoming": str(landing),
        "/var/lib/gpufleet": str(tmp_path / "var"),
        "/var/log/gpufleet": str(tmp_path / "log"),
        "/srv/gpufleet": str(tmp_path / "srv"),
        "/etc/gpufleet": str(tmp_path / "etc"),
    }
    for folder in ("var", "log", "srv", "etc"):
        (tmp_path / folder).mkdir()
    (tmp_path / "etc" / "gpufleet.toml").write_text("[availability]\nstaleness_s = 300\n")

    def rewrite(text: str) -> str:
        for old, new in replace.items():
            text = text.replace(old, new)
        return text

    run_env = {**shim, **{k: rewrite(v) for k, v in env.items() if k not in ("PATH", "SHELL")}}
    for schedule, command in jobs:
        assert all(re.fullmatch(r"[\d*/,-]+", f) for f in schedule), schedule
        assert "flock" in command and "timeout" in command
        assert "%" not in command  # cron turns an unescaped % into a newline
        result = subprocess.run(
            ["bash", "-c", rewrite(command)],
            env=run_env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        logs = "".join(p.read_text() for p in (tmp_path / "log").glob("*.log"))
        assert result.returncode == 0, logs + result.stderr
    last = parse_week("last").label
    assert list(
        (tmp_path / "srv" / "lake" / "weekly_summary").glob(f"cluster=*/week={last}/*.parquet")
    )
    assert (
        f"Weekly reliability report {last}"
        in (tmp_path / "srv" / "reports" / "last-week.html").read_text()
    )
    assert (tmp_path / "var" / "fleet.duckdb").exists()


def test_kubernetes_cronjob_runs(landing, shim, tmp_path):
    docs = list(yaml.safe_load_all((ROOT / "deploy" / "cronjob.yaml").read_text()))
    cronjob = next(d for d in docs if d["kind"] == "CronJob")
    config_map = next(d for d in docs if d["kind"] == "ConfigMap")
    spec = cronjob["spec"]
    assert spec["concurrencyPolicy"] == "Forbid" and spec["timeZone"] == "Etc/UTC"
    job = spec["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] > 0
    container = job["template"]["spec"]["containers"][0]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    data, config = tmp_path / "data", tmp_path / "config"
    shutil.copytree(landing, data / "incoming")
    config.mkdir()
    for name, text in config_map["data"].items():
        (config / name).write_text(text)

    def rewrite(text: str) -> str:
        return text.replace(mounts["data"], str(data)).replace(mounts["config"], str(config))

    env = {**shim, **{e["name"]: rewrite(e["value"]) for e in container["env"]}}
    script = rewrite(container["args"][0])
    result = subprocess.run(
        [*container["command"], script],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    last = parse_week("last").label
    assert list((data / "lake" / "node_availability_daily").glob("cluster=*/day=*/*.parquet"))
    assert list((data / "lake" / "weekly_summary").glob(f"cluster=*/week={last}/*.parquet"))
    assert (data / "reports" / "last-week.html").exists()
