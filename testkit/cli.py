"""The `gpufleet` command of this checkout, run as a user runs it: in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_gpufleet(
    cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`gpufleet ARGS` in `cwd`, its output captured. The caller's `GPUFLEET_*` variables are left
    out (a developer's `GPUFLEET_DB` would otherwise be the database), this checkout is on
    PYTHONPATH, then `env` is added."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")}
    return subprocess.run(
        [sys.executable, "-m", "pipelines", *args],
        cwd=cwd,
        env=base | {"PYTHONPATH": str(ROOT)} | (env or {}),
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
