"""Every source implements `pipelines.sources.protocol.Source`, and every run reports one shape."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

import pipelines.sources as sources_package
from pipelines.cli import ingest_app
from pipelines.contract import LANDING_TABLES
from pipelines.sources.kernel_log import KernelLogSource
from pipelines.sources.prometheus import PrometheusSource
from pipelines.sources.protocol import Source, SourceReport
from pipelines.sources.rank_steps import RankStepsSource
from pipelines.sources.slurm import SacctSource
from tests.test_slurm import SACCT

NOT_SOURCES = {"pci", "protocol", "scheduler_rows", "openmetrics"}
"""Shared pieces, and the OpenMetrics writer (the inverse of a source, for test servers)."""


def source_classes() -> dict[str, type[Source]]:
    """Module name -> the `Source` subclass it defines."""
    found: dict[str, type[Source]] = {}
    for info in pkgutil.iter_modules(sources_package.__path__):
        if info.name in NOT_SOURCES:
            continue
        module = importlib.import_module(f"pipelines.sources.{info.name}")
        classes = [
            c
            for _, c in inspect.getmembers(module, inspect.isclass)
            if issubclass(c, Source) and c is not Source and c.__module__ == module.__name__
        ]
        assert len(classes) == 1, (
            f"pipelines/sources/{info.name}.py defines {len(classes)} Source classes"
        )
        found[info.name] = classes[0]
    return found


def test_every_source_module_implements_the_protocol():
    classes = source_classes()
    assert set(classes) == {"files", "kernel_log", "kube_jobs", "prometheus", "rank_steps", "slurm"}
    for module, cls in classes.items():
        assert not inspect.isabstract(cls), (
            f"{cls.__name__} leaves abstract members: {cls.__abstractmethods__}"
        )
        assert cls.reads and cls.tables, module
        assert set(cls.tables) <= set(LANDING_TABLES), module


def test_every_ingest_command_is_a_source_and_every_source_a_command():
    commands = {c.name for c in ingest_app.registered_commands}
    assert {cls.name for cls in source_classes().values()} == commands


def test_only_sources_with_a_settings_section_read_settings():
    sections = {
        cls.name: cls.settings_section for cls in source_classes().values() if cls.settings_section
    }
    assert sections == {"prometheus": "prometheus"}


@pytest.mark.parametrize(
    "make, source_id, tables",
    [
        (
            lambda d: SacctSource(_write(d / "jobs.txt", SACCT)),
            "sacct:jobs.txt",
            {"jobs", "job_attempts"},
        ),
        (
            lambda d: RankStepsSource(
                _write(
                    d / "steps.csv",
                    "job_id,step,rank,node,end_ts,step_s\n"
                    "1001,1,0,n1,2026-11-23T10:00:01.250Z,1.25\n",
                )
            ),
            "rank-steps:steps.csv",
            {"rank_steps"},
        ),
        (
            lambda d: KernelLogSource(
                _write(
                    d / "dmesg.txt",
                    "[Mon Nov 23 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): "
                    "79, GPU has fallen off the bus.\n",
                ),
                "gpu-node-01",
            ),
            "kernel-log:gpu-node-01",
            {"gpu_events"},
        ),
    ],
    ids=["sacct", "rank-steps", "kernel-log"],
)
def test_a_file_source_reports_one_shape_and_has_no_watermark(
    con, tmp_path, make, source_id, tables
):
    source = make(tmp_path)
    report = source.ingest(con)
    assert isinstance(report, SourceReport)
    assert report.source == source.source_id == source_id
    assert {load.table for load in report.loads} == tables
    assert all(load.rows_new > 0 for load in report.loads)
    assert source.watermark(con) is None
    # Loading the same file again changes nothing: idempotent by natural key.
    again = make(tmp_path).ingest(con)
    assert all(load.rows_new == 0 and load.rows_changed == 0 for load in again.loads)


def test_kernel_log_report_says_how_many_xid_lines_it_read(con, tmp_path):
    path = _write(
        tmp_path / "dmesg.txt",
        "[Mon Nov 23 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, off the bus.\n"
        "[Mon Nov 23 10:00:01 2026] usb 1-1: new device\n",
    )
    report = KernelLogSource(path, "n1").ingest(con)
    assert report.notes == ["1 Xid lines read."]


def test_prometheus_source_id_and_watermark_before_any_run(con):
    start, end = datetime(2026, 11, 23, tzinfo=UTC), datetime(2026, 11, 24, tzinfo=UTC)
    source = PrometheusSource("https://sre:secret@prom.example:9090/", start, end, downsample_s=300)
    # The credentials never reach load_log; the push-down step is part of the id (its own watermarks).
    assert source.source_id == "prometheus:https://prom.example:9090:downsample=300s"
    assert source.watermark(con) is None


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
