"""Node and job names as a reader sees them across the fleet (SPEC "Fleet-wide identity").

Node names and job ids repeat across clusters (Slurm job ids restart at 1 in every cluster,
on-prem node names such as `gpu001` repeat). A name is shown bare where it is unique in the
fleet and qualified by its cluster, `east/gpu001`, where it is not: the dashboard and the
weekly report name nodes and jobs the same way. The names held by more than one cluster come
from `queries/app/shared_names.sql`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

QUALIFIER = "/"
"""Between the cluster and the name: `east/gpu001`."""


def qualified(name: str, cluster: str | None, shared: frozenset[str]) -> str:
    """`name` when it is unique in the fleet (not in `shared`) or its cluster is not known,
    else `cluster/name`."""
    if cluster is None or name not in shared:
        return name
    return f"{cluster}{QUALIFIER}{name}"


@dataclass(frozen=True)
class SharedNames:
    """The node names and job ids that more than one cluster holds."""

    nodes: frozenset[str] = field(default_factory=frozenset)
    jobs: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str]]) -> SharedNames:
        """From (kind, name) rows, kind `node` or `job` (shared_names.sql)."""
        nodes: set[str] = set()
        jobs: set[str] = set()
        for kind, name in rows:
            (nodes if kind == "node" else jobs).add(name)
        return cls(frozenset(nodes), frozenset(jobs))

    @classmethod
    def from_frame(cls, frame: pl.DataFrame) -> SharedNames:
        return cls.from_rows(frame.select("kind", "name").iter_rows())

    def node(self, name: str, cluster: str | None) -> str:
        return qualified(name, cluster, self.nodes)

    def job(self, job_id: str, cluster: str | None) -> str:
        return qualified(job_id, cluster, self.jobs)

    def qualify(
        self, frame: pl.DataFrame, column: str, kind: str, cluster_column: str = "cluster"
    ) -> pl.DataFrame:
        """`frame` with `column` (node names for kind `node`, job ids for `job`) qualified by
        `cluster_column` where the name is shared; a missing name stays missing.

        `column` holds a name per row or a list of names (a team's top idle jobs). With a list,
        `cluster_column` is either the row's one cluster or a list as long, a cluster per name."""
        shared = self.nodes if kind == "node" else self.jobs
        if not shared or column not in frame.columns:
            return frame
        if not isinstance(frame.schema[column], pl.List):
            return frame.with_columns(
                _qualified(pl.col(column), pl.col(cluster_column), shared).alias(column)
            )
        # Lists: one row per name, qualified as above, then put back into each row's list.
        row = "__qualify_row"
        exploded = (
            [column, cluster_column]
            if isinstance(frame.schema[cluster_column], pl.List)
            else [column]
        )
        names = (
            frame.select(column, cluster_column)
            .with_row_index(row)
            .explode(exploded, keep_nulls=False)  # empty and missing lists: kept as they are
            .with_columns(_qualified(pl.col(column), pl.col(cluster_column), shared).alias(column))
            .group_by(row, maintain_order=True)
            .agg(pl.col(column))
        )
        lists = (
            frame.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias(row))
            .join(names, on=row, how="left", maintain_order="left")
            .get_column(column)
        )
        return frame.with_columns(lists.zip_with(lists.is_not_null(), frame[column]).alias(column))


def _qualified(name: pl.Expr, cluster: pl.Expr, shared: frozenset[str]) -> pl.Expr:
    """`qualified` as an expression: `cluster/name` where `name` is shared and `cluster` known."""
    return (
        pl.when(name.is_in(list(shared)) & cluster.is_not_null())
        .then(pl.concat_str(cluster, pl.lit(QUALIFIER), name))
        .otherwise(name)
    )
