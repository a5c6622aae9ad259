"""How numbers read on the page: the formatters of `pipelines.presentation` (which the report
uses too), `—` for missing (never 0), and `text` for values shown as Markdown."""

from __future__ import annotations

from pipelines.markdown import escape_markdown
from pipelines.presentation import (
    MISSING,
    compact_s,
    delta,
    delta_pp,
    duration_s,
    gpu_hours,
    hours,
    number,
    pct,
    timestamp,
)

__all__ = [
    "MISSING",
    "compact_s",
    "delta",
    "delta_pp",
    "duration_s",
    "gpu_hours",
    "hours",
    "number",
    "pct",
    "text",
    "timestamp",
]

text = escape_markdown
"""A value from the URL or the data, as literal text in Markdown (never a link, image or HTML)."""
