"""Fetching one query's window chunk by chunk: each answer parsed, counted and landed.

A chunk the store keeps answering only in part stops its query there, or, with
`allow_partial`, what came of it is kept: of a partial answer only raw GPU samples land.
XID queries are seeded with each series' last value before the window, so the first chunk's
changes are read against what came before it."""

from __future__ import annotations

from collections.abc import Callable

from pipelines.sources.prometheus.client import Answer, PrometheusClient
from pipelines.sources.prometheus.landing import Landing
from pipelines.sources.prometheus.parse import parse_matrix
from pipelines.sources.prometheus.plan import Query, chunk_ms, chunk_promql, chunks, from_ms
from pipelines.sources.prometheus.report import IngestReport, PartialChunk, QueryReport
from pipelines.sources.prometheus.settings import PrometheusSettings

PartialSpan = tuple[int, int, str]
"""A chunk answered only in part: (start ms, end ms, what the store said)."""


class Fetcher:
    """Sends a run's queries; keeps what the store noted, the non-finite samples skipped and
    the chunks fetched, and records partial chunks and sample counts in the run's report."""

    def __init__(
        self,
        client: PrometheusClient,
        settings: PrometheusSettings,
        landing: Landing,
        report: IngestReport,
        *,
        downsample_s: int | None,
        allow_partial: bool,
        progress: Callable[[str], None] | None,
        after_chunk: Callable[[int], None] | None,
    ) -> None:
        self.client, self.s, self.landing, self.report = client, settings, landing, report
        self.downsample_s = downsample_s
        self.allow_partial = allow_partial
        self.progress = progress or (lambda _msg: None)
        self.after_chunk = after_chunk
        self.notes: dict[str, None] = {}
        self.non_finite = 0
        self.chunks_done = 0

    def ask(self, promql: str, at_ms: int) -> Answer:
        answer = self.client.query(promql, at_ms)
        for note in answer.notes:
            self.notes.setdefault(note)
        return answer

    def fetch(
        self, q: Query, start_ms: int, end_ms: int, qr: QueryReport
    ) -> tuple[int, list[PartialSpan]]:
        """Fetch and stage `[start_ms, end_ms)` of `q` chunk by chunk.

        Returns (how far the answers were complete or loaded, the chunks that stayed partial),
        the latter also recorded in the report. Without `allow_partial` the query stops at its
        first chunk that stays partial: the chunks before it are staged, nothing of it or after
        it is.
        """
        reached, partial = self._fetch_chunks(q, start_ms, end_ms, qr)
        for a, b, said in partial:
            self.report.partial.append(
                PartialChunk(q.key, from_ms(a), from_ms(b), said, self.allow_partial)
            )
        return reached, partial

    def _fetch_chunks(
        self, q: Query, start_ms: int, end_ms: int, qr: QueryReport
    ) -> tuple[int, list[PartialSpan]]:
        previous: dict[tuple, float] = {}
        seed_partial: str | None = None
        if q.kind in ("xid_count", "xid_last"):
            previous, seed_partial = self.seed_previous(q, start_ms)
        partial: list[PartialSpan] = []
        for a, b in chunks(start_ms, end_ms, chunk_ms(self.s, self.downsample_s)):
            self.progress(f"{q.key} {from_ms(a):%Y-%m-%d %H:%M}")
            answer = self.ask(chunk_promql(q, a, b, self.s, self.downsample_s), b - 1)
            said = answer.partial[0] if answer.partial else seed_partial
            seed_partial = None  # it spoils the first chunk's events only
            if said is not None:
                partial.append((a, b, said))
                if not self.allow_partial:
                    return a, partial
            chunk, non_finite = parse_matrix(answer.result, a, b)
            del answer
            self.non_finite += non_finite
            qr.series += len(chunk.labels)
            qr.samples += chunk.samples
            self.report.samples_fetched += chunk.samples
            if said is None or q.kind == "gpu":
                # Of a partial answer only raw GPU samples land: every sample that came is
                # exact. Conditions (one-hot series), node metrics (summed over series) and
                # XID events (changes) would be wrong with a series missing; they land when
                # the window is re-fetched complete.
                self.landing.land(q, chunk, previous)
            elif q.kind in ("xid_count", "xid_last") and b < end_ms:
                # The next chunk's XID changes must not be read against a state this one left out.
                previous, seed_partial = self.seed_previous(q, b)
            self.chunks_done += 1
            if self.after_chunk is not None:
                self.after_chunk(self.chunks_done)
        return end_ms, partial

    def seed_previous(self, q: Query, start_ms: int) -> tuple[dict[tuple, float], str | None]:
        """Each XID series' last value in the lookback before `start_ms`, and what the store
        said if it answered only in part. For the last-XID gauge, also when each GPU was last
        read (`Landing.start_xid_fetch`): one point per series, not every sample of the lookback
        (a fleet's every GPU has that gauge)."""
        lookback = int(self.s.xid_seed_lookback_s)
        answer = self.ask(f"last_over_time({q.selector}[{lookback}s])", start_ms - 1)
        said = answer.partial[0] if answer.partial else None
        seeded = {}
        for series in answer.result:
            key = self.landing.xid_key(series["metric"])
            if key is not None:
                seeded[key] = float(series["value"][1])
        read_ms: dict[tuple, int] = {}
        if q.kind == "xid_last":
            # timestamp() of a plain selector is its sample's own time; the subquery's steps
            # (one scrape interval apart) each see the newest sample, the max is the last read.
            step = max(1, int(self.s.scrape_interval_s))
            stamps = self.ask(
                f"max_over_time(timestamp({q.selector})[{lookback}s:{step}s])", start_ms - 1
            )
            said = said or (stamps.partial[0] if stamps.partial else None)
            for series in stamps.result:
                key = self.landing.xid_key(series["metric"], count=False)
                if key is not None:
                    t = round(float(series["value"][1]) * 1000)
                    read_ms[key] = max(t, read_ms.get(key, t))
        self.landing.start_xid_fetch(start_ms, read_ms)
        return seeded, said

    def warnings(self) -> list[str]:
        """What the store noted, and the non-finite samples skipped, as sentences."""
        out = [f"The store said: {note}" for note in self.notes]
        if self.non_finite:
            out.append(
                f"{self.non_finite:,} samples were not finite numbers (+Inf, -Inf, NaN) and were skipped "
                "(they count as missing telemetry)."
            )
        return out
