"""Kernel log source: `NVRM: Xid` lines from dmesg or the journal → `gpu_events`.

The fallback when DCGM itself is broken: the driver still writes every XID to the kernel
ring buffer. Accepted line shapes (one file is one node's log):

    [ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.
    [Mon Nov 23 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable ...
    2026-11-23T10:00:00,123456+00:00 NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception ...
    Nov 23 10:00:00 gpu-node-01 kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=77, name=train, Ch 00000008, ...
    2026-11-23T10:00:00+0000 gpu-node-01 kernel: NVRM: Xid (0000:3b:00): 94, Contained ECC error.

`dmesg` (seconds since boot) needs `boot_time`; `dmesg -T` and the journal's short format
print local time without a zone: run them with TZ=UTC. The short journal format has no year:
it is taken from `year` (default: the boot time's year, else the current year).

The GPU index and UUID come from the PCI bus id through `gpu_devices` (kept by the
Prometheus ingest from dcgm-exporter's `pci_bus_id` label) or an explicit `pci_map`;
an XID on a bus id neither knows lands with a NULL GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import duckdb
import polars as pl

from pipelines.errors import InputError
from pipelines.sources.pci import normalise_pci_bus_id
from pipelines.sources.protocol import SourceReport, WholeFileSource
from pipelines.sql import execute
from pipelines.store import ROW_COLUMN, LoadResult, TableInput, load_batch

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?\): "
    r"(?P<code>\d+)(?:, (?P<rest>.*))?$"
)
_PID_NAME = re.compile(r"^pid=(?:'[^']*'|[^,]*), (?:name=(?:'[^']*'|[^,]*), )?")
_DMESG_REL = re.compile(r"^\[\s*(\d+\.\d+)\]\s")
_DMESG_T = re.compile(r"^\[(\w{3} \w{3} +\d{1,2} \d{2}:\d{2}:\d{2} \d{4})\]\s")
_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s")
_SYSLOG = re.compile(r"^(\w{3} +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)?) \S+ kernel: ")


@dataclass
class KernelLogResult:
    events: pl.DataFrame
    xid_lines: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)
    """(line, why) of NVRM Xid lines that could not be read; at most 20 kept."""
    skipped_count: int = 0
    unmapped: int = 0

    def warnings(self, origin: str) -> list[str]:
        out = []
        if self.skipped_count:
            where = ", ".join(f"line {n} ({why})" for n, why in self.skipped[:5])
            out.append(
                f"{origin}: {self.skipped_count} Xid lines could not be read and were skipped: {where}."
            )
        if self.unmapped:
            out.append(
                f"{origin}: {self.unmapped} XIDs name a PCI bus id with no known GPU index; they landed "
                "without one. Ingest Prometheus first (dcgm-exporter's pci_bus_id label) or pass --pci-map."
            )
        return out


def _iso(text: str) -> datetime:
    text = text.replace(",", ".")
    text = re.sub(r"([+-]\d{2})(\d{2})$", r"\1:\2", text)
    parsed = datetime.fromisoformat(text)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def line_time(line: str, boot_time: datetime | None, year: int) -> tuple[datetime | None, str]:
    """(UTC time of a log line or None, what kind of stamp it had)."""
    if m := _DMESG_REL.match(line):
        if boot_time is None:
            return None, "dmesg-relative"
        return boot_time + timedelta(seconds=float(m.group(1))), "dmesg-relative"
    if m := _DMESG_T.match(line):
        return datetime.strptime(re.sub(" +", " ", m.group(1)), "%a %b %d %H:%M:%S %Y").replace(
            tzinfo=UTC
        ), "dmesg-T"
    if m := _ISO.match(line):
        return _iso(m.group(1)), "iso"
    if m := _SYSLOG.match(line):
        stamp = re.sub(" +", " ", m.group(1))
        fmt = "%Y %b %d %H:%M:%S.%f" if "." in stamp else "%Y %b %d %H:%M:%S"
        return datetime.strptime(f"{year} {stamp}", fmt).replace(tzinfo=UTC), "journal"
    return None, "none"


def parse_kernel_log(
    text: str,
    node: str,
    *,
    boot_time: datetime | None = None,
    year: int | None = None,
    pci_map: dict[str, tuple[int, str | None]] | None = None,
    origin: str = "<kernel log>",
) -> KernelLogResult:
    """XID events of one node's kernel log. `pci_map`: normalised bus id → (GPU index, UUID)."""
    year = year or (boot_time.year if boot_time else datetime.now(UTC).year)
    pci_map = pci_map or {}
    rows: list[dict] = []
    result = KernelLogResult(events=pl.DataFrame())
    for number, line in enumerate(text.splitlines(), start=1):
        if "NVRM: Xid" not in line:
            continue
        result.xid_lines += 1
        match = _XID.search(line)
        if not match:
            result.skipped_count += 1
            if len(result.skipped) < 20:
                result.skipped.append((number, "not an `NVRM: Xid (PCI:...): code, ...` message"))
            continue
        try:
            ts, kind = line_time(line, boot_time, year)
        except ValueError:
            ts, kind = None, "bad"
        if ts is None:
            if kind == "dmesg-relative":
                raise InputError(
                    "has dmesg timestamps in seconds since boot, which need the boot time",
                    file=origin,
                    line=number,
                    hint="Pass --boot-time (from `uptime -s` or `journalctl --list-boots`), or use `dmesg -T`.",
                )
            result.skipped_count += 1
            if len(result.skipped) < 20:
                result.skipped.append((number, "no timestamp gpufleet can read"))
            continue
        pci = normalise_pci_bus_id(match.group("pci"))
        gpu, uuid = pci_map.get(pci, (None, None)) if pci else (None, None)
        if gpu is None:
            result.unmapped += 1
        rest = match.group("rest") or ""
        message = _PID_NAME.sub("", rest).strip() or None
        rows.append(
            {
                ROW_COLUMN: number,
                "ts": ts,
                "node": node,
                "gpu": gpu,
                "uuid": uuid,
                "kind": "xid",
                "code": int(match.group("code")),
                "message": message,
                "source": "kernel-log",
            }
        )
    result.events = pl.DataFrame(
        rows,
        schema={
            ROW_COLUMN: pl.Int64,
            "ts": pl.Datetime("us", "UTC"),
            "node": pl.String,
            "gpu": pl.Int64,
            "uuid": pl.String,
            "kind": pl.String,
            "code": pl.Int64,
            "message": pl.String,
            "source": pl.String,
        },
    ).unique(subset=["ts", "node", "gpu", "kind", "code"], keep="first", maintain_order=True)
    return result


def stored_pci_map(con: duckdb.DuckDBPyConnection, node: str) -> dict[str, tuple[int, str | None]]:
    """The node's bus id → (GPU index, UUID) as the Prometheus ingest last saw them."""
    rows = execute(con, "ingest/stored_pci_map", {"node": node}).fetchall()
    return {pci: (gpu, uuid) for pci, gpu, uuid in rows}


def parse_pci_map(text: str) -> dict[str, tuple[int, str | None]]:
    """`0000:3b:00=0,0000:5e:00=1` → {bus id: (index, None)}."""
    out: dict[str, tuple[int, str | None]] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        bus, _, index = item.rpartition("=")
        pci = normalise_pci_bus_id(bus)
        if pci is None or not index.isdigit():
            raise InputError(
                f"`{item}` is not `PCI_BUS_ID=GPU_INDEX`",
                hint="Example: --pci-map 0000:3b:00=0,0000:5e:00=1",
            )
        out[pci] = (int(index), None)
    return out


def ingest_kernel_log(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    node: str,
    *,
    boot_time: datetime | None = None,
    year: int | None = None,
    pci_map: dict[str, tuple[int, str | None]] | None = None,
    cluster: str | None = None,
) -> tuple[list[LoadResult], KernelLogResult]:
    """Load the XIDs of one node's kernel log as one batch."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        raise InputError(f"cannot read the file: {e}", file=str(path)) from e
    mapping = stored_pci_map(con, node)
    mapping.update(pci_map or {})
    result = parse_kernel_log(
        text, node, boot_time=boot_time, year=year, pci_map=mapping, origin=str(path)
    )
    loads = load_batch(
        con,
        [TableInput("gpu_events", result.events, str(path), position="line")],
        source=f"kernel-log:{node}",
        cluster=cluster,
    )
    return loads, result


@dataclass(frozen=True)
class KernelLogSource(WholeFileSource):
    """`gpufleet ingest kernel-log FILE --node N`: one node's kernel log, one batch."""

    path: Path
    node: str
    boot_time: datetime | None = None
    year: int | None = None
    pci_map: dict[str, tuple[int, str | None]] | None = None
    cluster: str | None = None
    """The ingest's `--cluster` (see `Source.cluster`)."""

    name: ClassVar[str] = "kernel-log"
    reads: ClassVar[str] = "`dmesg` / `journalctl -k` text"
    tables: ClassVar[tuple[str, ...]] = ("gpu_events",)

    @property
    def source_id(self) -> str:
        return f"kernel-log:{self.node}"  # one node's log, whatever the file is called

    def ingest(self, con: duckdb.DuckDBPyConnection) -> SourceReport:
        loads, parsed = ingest_kernel_log(
            con,
            self.path,
            self.node,
            boot_time=self.boot_time,
            year=self.year,
            pci_map=self.pci_map,
            cluster=self.cluster,
        )
        return SourceReport(
            self.source_id,
            loads,
            warnings=parsed.warnings(str(self.path)),
            notes=[f"{parsed.xid_lines:,} Xid lines read."],
            detail=parsed,
        )
