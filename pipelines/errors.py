"""One error hierarchy: a title, the offending value, and the next step.

The CLI turns a `GpufleetError` into a clean message and a non-zero exit code;
the app turns it into `st.error`. Neither shows a traceback for these.
"""

from __future__ import annotations


class GpufleetError(Exception):
    """Base error: `title` says what failed, `hint` what to do next."""

    exit_code = 2

    def __init__(self, title: str, hint: str | None = None) -> None:
        super().__init__(title)
        self.title = title
        self.hint = hint

    def __str__(self) -> str:
        return self.title if not self.hint else f"{self.title}\n{self.hint}"


class ConfigError(GpufleetError):
    """`gpufleet.toml` or a command-line setting is invalid."""


class DatabaseMissingError(GpufleetError):
    """The DuckDB file does not exist or holds no gpufleet tables."""


class DatabaseBusyError(GpufleetError):
    """Another process holds the DuckDB write lock."""


class DatabaseCorruptError(GpufleetError):
    """The DuckDB file is truncated, damaged, or not a DuckDB file."""


class StorageError(GpufleetError):
    """The file system refused a write: disk full, read-only folder, no permission."""


class PrunedDataError(GpufleetError):
    """The command needs raw samples that `gpufleet prune --keep-raw` dropped."""


class OutOfMemoryError(GpufleetError):
    """A step ran out of memory (e.g. under GPUFLEET_MEMORY_LIMIT)."""


class InputError(GpufleetError):
    """A landing file or source payload does not fit the landing contract.

    Carries the file, the 1-based line or row, and the column, so the message
    points at the exact cell to fix.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: str | None = None,
        line: int | None = None,
        row: int | None = None,
        column: str | None = None,
        value: object = None,
        hint: str | None = None,
    ) -> None:
        self.file, self.line, self.row, self.column, self.value = file, line, row, column, value
        where = []
        if file:
            where.append(f"{file}")
        if line is not None:
            where.append(f"line {line}")
        if row is not None:
            where.append(f"row {row}")
        if column:
            where.append(f"column `{column}`")
        title = f"{', '.join(where)}: {problem}" if where else problem
        if value is not None:
            title += f" (got `{value}`)"
        super().__init__(
            title, hint or "Fix the value and run the ingest again; nothing was loaded."
        )


class SourceError(GpufleetError):
    """A remote source (Prometheus, a file we could not read) failed."""
