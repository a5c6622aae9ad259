"""Property tests: chunk edges never lose or repeat a sample; node lists expand exactly."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.sources.prometheus import chunks
from pipelines.sources.prometheus import parse_matrix as _matrix
from pipelines.sources.slurm import expand_nodelist


@given(start=st.integers(0, 10**7), length=st.integers(0, 10**6), size=st.integers(1000, 10**5))
def test_chunks_tile_the_window(start, length, size):
    parts = chunks(start, start + length, size)
    assert sum(b - a for a, b in parts) == length
    assert all(0 < b - a <= size for a, b in parts)
    assert all(parts[i][1] == parts[i + 1][0] for i in range(len(parts) - 1))
    if parts:
        assert parts[0][0] == start and parts[-1][1] == start + length


def _server_answer(samples: list[int], a: int, b: int, closed: bool) -> list[dict]:
    """What a range selector `[b - a]` evaluated at b - 1 ms returns: Prometheus 2 includes the
    left edge (closed range [a - 1, b - 1]), Prometheus 3 excludes it ((a - 1, b - 1])."""
    lo = a - 1
    kept = [t for t in samples if (lo <= t if closed else lo < t) and t <= b - 1]
    return (
        [{"metric": {"__name__": "m"}, "values": [[t / 1000, "1"] for t in kept]}] if kept else []
    )


@settings(deadline=None)
@given(
    samples=st.lists(st.integers(0, 100_000), unique=True).map(sorted),
    start=st.integers(0, 50_000),
    length=st.integers(0, 60_000),
    size=st.integers(100, 20_000),
    closed=st.booleans(),
)
def test_every_sample_of_the_window_is_fetched_exactly_once(samples, start, length, size, closed):
    end = start + length
    parts = chunks(start, end, size)
    # Scrapes land on chunk edges in practice: put samples at, just before and just after each edge.
    edges = {t for a, b in parts for edge in (a, b) for t in (edge - 1, edge, edge + 1) if t >= 0}
    samples = sorted(set(samples) | edges)
    fetched = []
    for a, b in parts:
        for _labels, ts, _values in _matrix(_server_answer(samples, a, b, closed), a, b)[
            0
        ].series():
            fetched.extend(ts)
    assert fetched == [t for t in samples if start <= t < end]


@given(
    prefix=st.sampled_from(["gpu-", "node", "a100-r1-", "x"]),
    width=st.integers(1, 4),
    numbers=st.sets(st.integers(0, 999), min_size=1, max_size=30),
)
def test_compressed_node_lists_expand_to_the_hosts(prefix, width, numbers):
    numbers = sorted(n for n in numbers if len(str(n)) <= width)
    if not numbers:
        return
    # Compress the way Slurm does: runs of consecutive numbers become `lo-hi`.
    runs, run = [], [numbers[0]]
    for n in numbers[1:]:
        if n == run[-1] + 1:
            run.append(n)
        else:
            runs.append(run)
            run = [n]
    runs.append(run)
    fmt = f"{{:0{width}d}}"
    spec = ",".join(
        fmt.format(r[0]) if len(r) == 1 else f"{fmt.format(r[0])}-{fmt.format(r[-1])}" for r in runs
    )
    hosts = [f"{prefix}{fmt.format(n)}" for n in numbers]
    assert expand_nodelist(f"{prefix}[{spec}]") == hosts
