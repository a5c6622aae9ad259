"""Python processes the tests start: a command run to its end, and another program holding a
database (a process that runs a script on the file, says it is ready, and holds on until the
test is done with it)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def run_python(
    args: list[str], *, env: dict[str, str], cwd: Path, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """`python *args` to its end (at most 300 s), its output captured as text; never raises
    on a non-zero exit (the tests read the return code and stderr)."""
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        **kwargs,
    )


@contextmanager
def holding(
    script: str, db: Path, ready: str, *, env: dict[str, str], cwd: Path, timeout_s: float = 60
) -> Iterator[subprocess.Popen[str]]:
    """`python -c script db` until the block ends. The script prints `ready` once it holds what
    it holds (a lock, an open connection) and then waits for a line on stdin, which the end of
    the block sends; the process is then waited for, so its return code can be checked."""
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(db)],
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == ready
        yield holder
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=timeout_s)
