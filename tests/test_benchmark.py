"""The benchmark harness at a tiny scale: every stage runs, is measured, and has its ratio to the floor."""

from __future__ import annotations

import json

import pytest

from benchmarks import run
from benchmarks.optional import optional_stages


def test_the_xs_benchmark_reports_every_stage_against_the_floor(tmp_path):
    out = run.main(
        [
            "--scale",
            "XS",
            "--workdir",
            str(tmp_path / "work"),
            "--results",
            str(tmp_path / "results"),
        ]
    )
    result = json.loads(out.read_text())
    extra, unavailable = optional_stages([], [], tmp_path, run.WEEK)
    updates = [
        f"update_{u}_{part}" for u in ("next_hour", "next_day") for part in ("ingest", "compute")
    ]
    expected = [
        "simulate",
        "deliveries",
        "ingest",
        "floor",
        "compute",
        "compute_unchanged",
        *(name for name, _ in extra),
        "update_next_hour_one_write",
        *updates,
    ]
    stages = {s["stage"]: s for s in result["stages"]}
    assert list(stages) == expected
    assert result["unavailable"] == unavailable
    # gpu_samples + rank_steps: 4 nodes x 8 GPUs x 14 DCGM fields x 1,440 minutes = 645,120 samples,
    # less the few the fault plan removes, plus the training jobs' steps.
    assert result["rows"] > 0.9 * 645_120
    for s in stages.values():
        assert s["seconds"] > 0 and s["cpu_s"] > 0 and s["peak_rss_mib"] > 0
        assert s["ratio_to_floor"] == pytest.approx(
            s["seconds"] / stages["floor"]["seconds"], abs=0.01
        )
    assert stages["floor"]["ratio_to_floor"] == 1.0
    for name in ("ingest", "floor", "compute"):
        assert stages[name]["rows"] == result["rows"]
        assert stages[name]["rows_per_s"] == pytest.approx(
            result["rows"] / stages[name]["seconds"], rel=1e-3
        )
    assert stages["compute_unchanged"]["rows"] is None
    # Each update brought new rows, so its compute ran every step instead of skipping.
    for update in ("next_hour", "next_day"):
        assert stages[f"update_{update}_compute"]["detail"]["steps_s"], update
    # The same hour in one write, on a copy that is gone afterwards: its compute ran the same steps.
    one_write = stages["update_next_hour_one_write"]["detail"]["steps_s"]
    assert one_write.keys() == stages["update_next_hour_compute"]["detail"]["steps_s"].keys()
    # The floor's one pass saw every (node, gpu, metric) series: 4 x 8 x 14.
    assert stages["floor"]["detail"]["gpu_series"] == 4 * 8 * 14
    for name, s in stages.items():
        if name.startswith("app_"):
            assert s["detail"]["queries"], name
            # Every query ran (a parameter the harness does not supply shows as `skipped: ...`).
            skipped = {q: v for q, v in s["detail"]["queries"].items() if not isinstance(v, float)}
            assert not skipped, (name, skipped)
    assert not (tmp_path / "work").exists(), "the data set is deleted unless --keep"
