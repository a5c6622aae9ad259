"""Prometheus ingest throughput versus a raw HTTP fetch of the same queries with curl.

    PYTHONPATH=. python -m benchmarks.prometheus_ingest --nodes 8 --days 1

Simulates a fleet, backfills it into a real Prometheus (promtool), runs
`ingest_prometheus` over the whole window, then replays the exact queries it sent
with one `curl` process (keep-alive, bodies discarded). Prints samples/s of both and
the ratio: what parsing, validation and the transactional load cost over the wire time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

from pipelines.simulate import SimulationConfig, simulate
from pipelines.sources.prometheus import PrometheusSettings, ingest_prometheus
from pipelines.store import open_store, row_counts
from testkit.prometheus_server import backfill, prometheus_server


def run(nodes: int, days: int, chunk_s: int, downsample_s: int | None) -> dict:
    frames = simulate(SimulationConfig.create(nodes=nodes, days=days, seed=1))
    work = Path(tempfile.mkdtemp(prefix="gpufleet-bench-"))
    try:
        began = time.perf_counter()
        written = backfill(frames, work / "data")
        backfill_s = time.perf_counter() - began
        start, last = frames["gpu_samples"]["ts"].min(), frames["gpu_samples"]["ts"].max()
        assert isinstance(start, datetime) and isinstance(last, datetime)  # a Datetime column
        end = last + timedelta(seconds=1)
        settings = PrometheusSettings(scrape_interval_s=60, chunk_s=chunk_s)
        with prometheus_server(work / "data") as server:
            con = open_store(work / "bench.duckdb")
            report = ingest_prometheus(
                con, server.url, start, end, settings, downsample_s=downsample_s
            )
            counts = row_counts(
                con, ("gpu_samples", "node_samples", "node_conditions", "gpu_events", "nodes")
            )
            con.close()
            config = work / "curl.cfg"
            with open(config, "w") as f:
                for promql, at_ms in report.history:
                    query = urlencode({"query": promql, "time": f"{at_ms / 1000:.3f}"})
                    f.write(f'url = "{server.url}/api/v1/query?{query}"\noutput = "/dev/null"\n')
            curl_s = {}
            for name, flags in (("plain", []), ("gzip", ["--compressed"])):
                began = time.perf_counter()
                subprocess.run(
                    ["curl", "--silent", "--fail", *flags, "-K", str(config)],
                    check=True,
                    timeout=3600,
                )
                curl_s[name] = time.perf_counter() - began
        return {
            "nodes": nodes,
            "days": days,
            "chunk_s": chunk_s,
            "downsample_s": downsample_s,
            "samples_backfilled": written,
            "backfill_s": round(backfill_s, 1),
            "requests": report.requests_made,
            "samples_fetched": report.samples_fetched,
            "rows_landed": counts,
            "ingest_s": round(report.seconds, 2),
            "ingest_samples_per_s": round(report.samples_fetched / report.seconds),
            # requests asks for gzip, as curl --compressed does; both are shown.
            "curl_s": {k: round(v, 2) for k, v in curl_s.items()},
            "curl_samples_per_s": {k: round(report.samples_fetched / v) for k, v in curl_s.items()},
            "ingest_over_curl_time_ratio": {
                k: round(report.seconds / v, 1) for k, v in curl_s.items()
            },
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--chunk-s", type=int, default=21600)
    parser.add_argument("--downsample-s", type=int, default=None)
    args = parser.parse_args()
    print(json.dumps(run(args.nodes, args.days, args.chunk_s, args.downsample_s), indent=2))


if __name__ == "__main__":
    main()
