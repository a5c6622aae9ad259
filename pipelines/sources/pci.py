"""PCI bus ids as the landing tables hold them (`gpu_devices.pci_bus_id`): `0000:3b:00`.

dcgm-exporter's `pci_bus_id` label and the kernel log's `NVRM: Xid (PCI:...)` lines spell the
same id differently; both sources normalise through here so they meet in `gpu_devices`.
"""

from __future__ import annotations

import re


def normalise_pci_bus_id(text: str) -> str | None:
    """`00000000:3B:00.0`, `0000:3b:00` or `3b:00.0` → `0000:3b:00` (domain:bus:device)."""
    match = re.match(
        r"^(?:(?:PCI:)?([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.[0-7])?$",
        text.strip(),
    )
    if not match:
        return None
    domain = int(match.group(1) or "0", 16)
    return f"{domain:04x}:{int(match.group(2), 16):02x}:{int(match.group(3), 16):02x}"
