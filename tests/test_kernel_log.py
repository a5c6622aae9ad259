"""Kernel log parsing: NVRM Xid lines in dmesg, dmesg -T, ISO and journal formats."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipelines.errors import InputError
from pipelines.sources.kernel_log import ingest_kernel_log, parse_kernel_log, parse_pci_map

BOOT = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
AT = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
MAP = {"0000:3b:00": (2, "GPU-aaaa"), "0000:af:00": (7, "GPU-bbbb")}


@pytest.mark.parametrize(
    ("line", "ts", "gpu", "code", "message"),
    [
        # dmesg: seconds since boot (09:00 + 3600 s)
        (
            "[ 3600.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
            AT,
            2,
            79,
            "GPU has fallen off the bus.",
        ),
        # dmesg -T, pid/name unknown and quoted
        (
            (
                "[Mon Nov 23 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, "
                "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0."
            ),
            AT,
            2,
            48,
            "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0.",
        ),
        # dmesg --time-format iso, no pid at all
        (
            "2026-11-23T10:00:00,000000+00:00 NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Misaligned Address",
            AT,
            2,
            13,
            "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Misaligned Address",
        ),
        # journalctl (short): no year, host and `kernel:` prefix
        (
            "Nov 23 10:00:00 gpu-node-01 kernel: NVRM: Xid (PCI:0000:af:00): 31, pid=77, name=train, Ch 00000008, intr 00000000. MMU Fault",
            AT,
            7,
            31,
            "Ch 00000008, intr 00000000. MMU Fault",
        ),
        # journalctl -o short-precise
        (
            "Nov 23 10:00:00.250000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:af:00): 94, pid=77, name=train, Contained ECC error.",
            datetime(2026, 11, 23, 10, 0, 0, 250000, tzinfo=UTC),
            7,
            94,
            "Contained ECC error.",
        ),
        # journalctl -o short-iso with +0100 offset, older driver without `PCI:`
        (
            "2026-11-23T11:00:00+0100 gpu-node-01 kernel: NVRM: Xid (0000:AF:00): 119, pid=9, name=x, Timeout after 6s of waiting for RPC response from GPU1 GSP!",
            AT,
            7,
            119,
            "Timeout after 6s of waiting for RPC response from GPU1 GSP!",
        ),
        # a bus id no mapping knows: GPU unknown
        (
            "[ 3600.000000] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.",
            AT,
            None,
            79,
            "GPU has fallen off the bus.",
        ),
    ],
)
def test_xid_line_formats(line, ts, gpu, code, message):
    result = parse_kernel_log(line, "gpu-node-01", boot_time=BOOT, pci_map=MAP)
    assert result.events.select(
        "ts", "node", "gpu", "code", "message", "kind", "source"
    ).rows() == [(ts, "gpu-node-01", gpu, code, message, "xid", "kernel-log")]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("[ 3600.000000] NVRM: Xid (PCI:0000:3b:00): seventy-nine", "not an `NVRM: Xid"),  # no code
        (
            "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
            "no timestamp",
        ),  # bare message
        (
            "[Mon Nov 31 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, x",
            "no timestamp",
        ),  # impossible date
    ],
)
def test_malformed_xid_lines_are_counted_skips(line, why):
    text = f"[ 1.0] Linux version 6.8.0\n{line}\n[ 3600.000000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."
    result = parse_kernel_log(text, "n1", boot_time=BOOT, pci_map=MAP)
    assert result.events.height == 1
    assert result.skipped_count == 1 and result.skipped[0][0] == 2 and why in result.skipped[0][1]
    assert "line 2" in result.warnings("dmesg.txt")[0]


def test_relative_dmesg_without_boot_time_is_an_error():
    with pytest.raises(InputError) as err:
        parse_kernel_log("[ 5.0] NVRM: Xid (PCI:0000:3b:00): 79, x", "n1", origin="dmesg.txt")
    assert "dmesg.txt, line 1" in str(err.value) and "--boot-time" in str(err.value)


def test_other_lines_are_ignored_and_repeats_land_once():
    text = "[ 1.000000] Linux version 6.8.0-1015-aws\n[ 3600.000000] NVRM: GPU at PCI:0000:3b:00: GPU-aaaa\n[ 3600.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=a, GPU has fallen off the bus.\n[ 3600.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=a, GPU has fallen off the bus."
    result = parse_kernel_log(text, "n1", boot_time=BOOT, pci_map=MAP)
    assert result.xid_lines == 2 and result.events.height == 1


def test_ingest_maps_bus_ids_through_stored_devices(con, tmp_path):
    con.execute(
        "INSERT INTO gpu_devices VALUES ('n1', 5, 'GPU-from-dcgm', '0000:3b:00', '2026-11-23 00:00:00+00')"
    )
    path = tmp_path / "dmesg.txt"
    path.write_text(
        "[Mon Nov 23 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
        "[Mon Nov 23 10:05:00 2026] NVRM: Xid (PCI:0000:5e:00): 74, NVLink: fatal error\n"
    )
    loads, result = ingest_kernel_log(con, path, "n1", pci_map=parse_pci_map("0000:5e:00=1"))
    assert loads[0].rows_new == 2 and result.unmapped == 0
    assert con.execute("SELECT gpu, uuid, code FROM gpu_events ORDER BY ts").fetchall() == [
        (5, "GPU-from-dcgm", 79),
        (1, None, 74),
    ]
    ingest_kernel_log(con, path, "n1", pci_map=parse_pci_map("0000:5e:00=1"))
    assert con.execute("SELECT count(*) FROM gpu_events").fetchall()[0][0] == 2


@pytest.mark.parametrize("text", ["3b:00", "0000:3b:00=x", "nope=1"])
def test_bad_pci_map(text):
    with pytest.raises(InputError, match="is not `PCI_BUS_ID=GPU_INDEX`"):
        parse_pci_map(text)
