"""The `gpufleet` command line.

Global options (`--db`, `--config`) go before or after the command:
`gpufleet --db fleet.duckdb ingest files DIR` = `gpufleet ingest files DIR --db fleet.duckdb`.
Every `GpufleetError` becomes a one-paragraph message and exit code 2.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from pipelines.config import Settings, db_path, load_settings
from pipelines.errors import GpufleetError

if TYPE_CHECKING:
    from pipelines.compute import ComputeResult
    from pipelines.serving import WriteSession
    from pipelines.sources.protocol import Source, SourceReport

app = typer.Typer(
    name="gpufleet",
    help=(
        "GPU fleet reliability analytics and goodput.\n\n"
        "Global options (--db, --config) may also follow the command. Environment: GPUFLEET_DB "
        "(database), GPUFLEET_CONFIG (settings file), GPUFLEET_<SECTION>__<KEY> (one setting; "
        "`gpufleet config` shows them all), GPUFLEET_PROM_URL, GPUFLEET_PROM_TOKEN or "
        "GPUFLEET_PROM_USER and GPUFLEET_PROM_PASSWORD (Prometheus)."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
ingest_app = typer.Typer(help="Load a source into the landing tables.", no_args_is_help=True)
app.add_typer(ingest_app, name="ingest")

PARTIAL_EXIT_CODE = 3
"""`ingest prometheus`: the store answered some chunks only in part (loaded as incomplete, or left for the next run)."""

# Never wrapped: without a terminal rich wraps at 80 columns, which splits a message or a path in
# a scheduled run's log and in anything reading the output line by line.
console = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


_database: Path | None = None
"""The command's database, named by the one-line errors of `main`."""


class Context:
    """What the global options resolve to, shared by every command."""

    def __init__(self, db: Path, config: str | None, db_option: str | None = None) -> None:
        self.db = db
        self.config = config
        self.db_option = db_option

    def settings(self) -> Settings:
        return load_settings(self.config)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            out.print(f"gpufleet {version('gpufleet')}", highlight=False)
        except PackageNotFoundError:
            out.print("gpufleet (not installed as a package)", highlight=False)
        raise typer.Exit()


GLOBAL_OPTIONS = ("--db", "--config")


def global_options_first(argv: list[str]) -> list[str]:
    """`argv` with `--db X` / `--config X` (or `--db=X`) moved before the command, where the
    command line parser reads them; anything after `--` stays as it is."""
    moved: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        name = arg.split("=", 1)[0]
        if name in GLOBAL_OPTIONS and "=" in arg:
            moved.append(arg)
        elif arg in GLOBAL_OPTIONS and i + 1 < len(argv):
            moved += [arg, argv[i + 1]]
            i += 1
        else:
            rest.append(arg)
        i += 1
    return moved + rest


@app.callback()
def main_options(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option("--db", help="DuckDB file (default: $GPUFLEET_DB or fleet.duckdb)."),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config", help="Settings file (default: $GPUFLEET_CONFIG, else ./gpufleet.toml)."
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    global _database
    ctx.obj = Context(db_path(db), config, db)
    _database = ctx.obj.db.absolute()


@contextmanager
def _writing(
    ctx: typer.Context, command: str, *, create: bool, then_compute: bool = False
) -> Iterator[WriteSession]:
    """The one way every writing command reaches the database (see pipelines/serving.py).

    `then_compute`: after the command's own writes, `gpufleet compute` in the same private copy
    (one copy instead of two; readers see the new data and its numbers together); its result in
    `session.computed`."""
    from pipelines.serving import writing

    with writing(ctx.obj.db, command=f"gpufleet {command}", create=create) as session:
        yield session
        if then_compute:
            with console.status("Computing ...") as status:
                session.computed = _compute_in(session, ctx.obj.settings(), False, status)


def _compute_in(
    session: WriteSession, settings: Settings, force: bool, status: Any
) -> ComputeResult:
    """`gpufleet compute` on a writing command's connection, its progress shown in `status`."""
    from pipelines.compute import compute as run_compute

    return run_compute(
        session.con,
        settings,
        force=force,
        progress=lambda s: status.update(f"Computing {s} ..."),
    )


def _print_computed_if(session: WriteSession) -> None:
    if session.computed is None:
        return
    from pipelines.compute import ComputeResult

    if isinstance(session.computed, ComputeResult):
        _print_computed(session.computed)


def _print_computed(result: ComputeResult) -> None:
    if result.skipped:
        out.print(f"Nothing changed since the last compute (data version {result.data_version}).")
        return
    for name, seconds in result.timings_s.items():
        out.print(f"{name:<28} {seconds:8.2f} s")
    out.print(
        f"Computed data version {result.data_version} in {sum(result.timings_s.values()):.2f} s."
    )


def _print_loads(results) -> None:
    for r in results:
        line = (
            f"{r.table:<16} {r.rows_in:>12,} rows read  {r.rows_new:>12,} new  "
            f"{r.rows_updated:>10,} updated  {r.rows_unchanged:>12,} unchanged"
        )
        if r.repeats_skipped:
            line += f"  ({r.repeats_skipped:,} repeated records skipped)"
        if r.clipped:
            line += f"  ({r.clipped:,} compute_s clipped to step_s)"
        out.print(line, highlight=False, soft_wrap=True)
    if results and not any(r.rows_changed for r in results):
        out.print("Nothing new: the data version is unchanged.", highlight=False)


BatchCluster = Annotated[
    str | None,
    typer.Option(
        help="The cluster every record of this batch belongs to (default: the records' own "
        "`cluster`, else their nodes' in `nodes`)."
    ),
]
"""`--cluster` of every ingest command."""

ThenCompute = Annotated[
    bool,
    typer.Option(
        "--compute",
        help="Then compute the derived tables in the same write (what `gpufleet compute` does): "
        "one copy of the database instead of two, and readers see the new data with its numbers.",
    ),
]
"""`--compute` of every ingest command."""


@ingest_app.command("files")
def ingest_files_cmd(
    ctx: typer.Context,
    folder: Annotated[Path, typer.Argument(help="Folder of <table>.csv|.jsonl|.parquet files.")],
    cluster: BatchCluster = None,
    then_compute: ThenCompute = False,
) -> None:
    """Load landing-contract files (CSV, JSONL, Parquet) as one batch."""
    from pipelines.sources.files import FilesSource

    with (
        _writing(ctx, "ingest files", create=True, then_compute=then_compute) as session,
        console.status(f"Loading {folder} ..."),
    ):
        report = FilesSource(folder, cluster=cluster).ingest(session.con)
    _print_report(report)
    _print_computed_if(session)


def _print_warnings(warnings: list[str]) -> None:
    for warning in warnings:
        console.print(f"[yellow]Warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)


def _print_report(report: SourceReport) -> None:
    """Every source's run the same way: its warnings, what it read, then each table's counts."""
    _print_warnings(report.warnings)
    for note in report.notes:
        out.print(note)
    _print_loads(report.loads)


def _source_settings(ctx: typer.Context, source: type[Source]) -> Any:
    """The one way a source gets settings: its `[section]` of gpufleet.toml, as validated there."""
    return getattr(ctx.obj.settings(), source.settings_section) if source.settings_section else None


@ingest_app.command("prometheus")
def ingest_prometheus_cmd(
    ctx: typer.Context,
    url: Annotated[
        str,
        typer.Option(
            envvar="GPUFLEET_PROM_URL",
            help="Prometheus-compatible API root, e.g. http://prometheus:9090.",
        ),
    ],
    start: Annotated[
        str, typer.Option(help="First instant: RFC 3339 (2026-11-23T00:00:00Z) or relative (-7d).")
    ],
    end: Annotated[
        str, typer.Option(help="End instant (exclusive): RFC 3339, relative, or `now`.")
    ] = "now",
    insecure: Annotated[
        bool, typer.Option("--insecure", help="Do not verify the server's TLS certificate.")
    ] = False,
    downsample: Annotated[
        int | None,
        typer.Option(
            help="Push aggregation down to the server: one point per this many seconds per series."
        ),
    ] = None,
    full: Annotated[
        bool,
        typer.Option("--full", help="Ignore the stored watermarks and fetch the whole window."),
    ] = False,
    allow_partial: Annotated[
        bool,
        typer.Option(
            "--allow-partial",
            help="Load what a store answers only in part, and record those windows "
            "as incomplete (re-fetched by later runs).",
        ),
    ] = False,
    cluster: BatchCluster = None,
    then_compute: ThenCompute = False,
) -> None:
    """Fetch dcgm-exporter, kube-state-metrics and node-exporter series (raw samples, incremental).

    Credentials come from the environment: GPUFLEET_PROM_TOKEN (bearer) or
    GPUFLEET_PROM_USER and GPUFLEET_PROM_PASSWORD (basic auth). A private CA: REQUESTS_CA_BUNDLE.
    Exit code 3: the store answered some chunks only in part (the message says how many).
    """
    from pipelines.sources.prometheus import PrometheusSource
    from pipelines.times import parse_time

    settings = _source_settings(ctx, PrometheusSource)
    start_ts, end_ts = parse_time(start), parse_time(end)
    with (
        _writing(ctx, "ingest prometheus", create=True, then_compute=then_compute) as session,
        console.status("Fetching ...") as status,
    ):
        run = PrometheusSource(
            url,
            start_ts,
            end_ts,
            settings,
            insecure=insecure,
            downsample_s=downsample,
            full=full,
            allow_partial=allow_partial,
            cluster=cluster,
            progress=lambda msg: status.update(f"Fetching {msg} ..."),
        ).ingest(session.con)
    _print_report(run)
    _print_computed_if(session)
    report = run.detail  # the requests, samples and partial answers only this source has
    rate = report.samples_fetched / report.seconds if report.seconds else 0.0
    from pipelines.sources.prometheus import count, partial_summary

    partial = f", {count(len(report.partial), 'chunk')} partial" if report.partial else ""
    refilled = (
        f", {count(report.refilled, 'incomplete window')} now complete" if report.refilled else ""
    )
    out.print(
        f"Fetched {report.samples_fetched:,} samples in {report.requests_made:,} requests, "
        f"{report.seconds:.1f} s ({rate:,.0f} samples/s){partial}{refilled}."
    )
    if report.partial:
        title, hint = partial_summary(report)
        console.print(f"[bold red]Error:[/] {escape(title)}", highlight=False)
        console.print(hint, highlight=False, markup=False)
        raise typer.Exit(PARTIAL_EXIT_CODE)


@ingest_app.command("sacct")
def ingest_sacct_cmd(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            help="Output of `TZ=UTC sacct --parsable2 --duplicates --format=...` (docs/sources.md)."
        ),
    ],
    delimiter: Annotated[
        str, typer.Option(help="The field separator sacct was run with (`sacct --delimiter`).")
    ] = "|",
    cluster: BatchCluster = None,
    then_compute: ThenCompute = False,
) -> None:
    """Load Slurm jobs and their requeued attempts from sacct output."""
    from pipelines.sources.slurm import SacctSource

    with _writing(ctx, "ingest sacct", create=True, then_compute=then_compute) as session:
        report = SacctSource(file, delimiter, cluster=cluster).ingest(session.con)
    _print_report(report)
    _print_computed_if(session)


@ingest_app.command("kube-jobs")
def ingest_kube_jobs_cmd(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(help="Output of `kubectl get jobs,pytorchjobs,pods -A -o json`.")
    ],
    user_label: Annotated[
        str, typer.Option(help="Pod/job label naming the user.")
    ] = "gpufleet.io/user",
    pods: Annotated[
        Path | None,
        typer.Option(help="Output of `kubectl get pods -A -o json`: the nodes and exit codes."),
    ] = None,
    cluster: BatchCluster = None,
    then_compute: ThenCompute = False,
) -> None:
    """Load Kubernetes Jobs and Kubeflow PyTorchJobs (nodes and exit codes from their pods)."""
    from pipelines.sources.kube_jobs import KubeJobsSource

    with _writing(ctx, "ingest kube-jobs", create=True, then_compute=then_compute) as session:
        report = KubeJobsSource(file, user_label, pods, cluster=cluster).ingest(session.con)
    _print_report(report)
    _print_computed_if(session)


@ingest_app.command("kernel-log")
def ingest_kernel_log_cmd(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="dmesg or journalctl -k text of one node.")],
    node: Annotated[str, typer.Option(help="The node the log comes from.")],
    boot_time: Annotated[
        str | None,
        typer.Option(help="Boot time, RFC 3339 (needed for plain dmesg's seconds since boot)."),
    ] = None,
    year: Annotated[
        int | None, typer.Option(help="Year of journal lines (their stamps have none).")
    ] = None,
    pci_map: Annotated[
        str | None, typer.Option(help="PCI bus id to GPU index, e.g. 0000:3b:00=0,0000:5e:00=1.")
    ] = None,
    cluster: BatchCluster = None,
    then_compute: ThenCompute = False,
) -> None:
    """Load `NVRM: Xid` lines as GPU events (source `kernel-log`)."""
    from pipelines.sources.kernel_log import KernelLogSource, parse_pci_map
    from pipelines.times import parse_time

    with _writing(ctx, "ingest kernel-log", create=True, then_compute=then_compute) as session:
        report = KernelLogSource(
            file,
            node,
            boot_time=parse_time(boot_time) if boot_time else None,
            year=year,
            pci_map=parse_pci_map(pci_map) if pci_map else None,
            cluster=cluster,
        ).ingest(session.con)
    _print_report(report)
    _print_computed_if(session)


@ingest_app.command("rank-steps")
def ingest_rank_steps_cmd(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(help="Per-rank step timings, .jsonl or .csv (docs/sources.md).")
    ],
    cluster: BatchCluster = None,
    then_compute: ThenCompute = False,
) -> None:
    """Load per-rank step timings logged by a training job."""
    from pipelines.sources.rank_steps import RankStepsSource

    with _writing(ctx, "ingest rank-steps", create=True, then_compute=then_compute) as session:
        report = RankStepsSource(file, cluster=cluster).ingest(session.con)
    _print_report(report)
    _print_computed_if(session)


@app.command()
def compute(
    ctx: typer.Context,
    force: Annotated[
        bool,
        typer.Option(
            help=(
                "Recompute everything, even if nothing changed, kept tables (gpu_scrapes, "
                "gpu_samples_15m) included."
            )
        ),
    ] = False,
) -> None:
    """(Re)build the derived tables and views from the landing tables."""
    import duckdb

    from pipelines.compute import is_current
    from pipelines.serving import open_snapshot
    from pipelines.store import data_version

    settings = ctx.obj.settings()
    if not force:
        # Checked on the published version first: an unchanged database costs no lock and no copy.
        con = open_snapshot(ctx.obj.db)
        try:
            current, version = is_current(con, settings), data_version(con)
        except duckdb.CatalogException:
            current, version = False, 0  # no landing tables yet: the compute below says so
        finally:
            con.close()
        if current:
            out.print(f"Nothing changed since the last compute (data version {version}).")
            return
    with (
        _writing(ctx, "compute", create=False) as session,
        console.status("Computing ...") as status,
    ):
        result = _compute_in(session, settings, force, status)
        session.publish = not result.skipped
    _print_computed(result)


@app.command()
def prune(
    ctx: typer.Context,
    keep_raw: Annotated[
        str,
        typer.Option(
            "--keep-raw",
            help=(
                "Raw history to keep, counted back from the newest data: 14d, 2w, 36h. Older GPU "
                "samples are dropped (but the error counters the detectors read); their rollups, "
                "findings and reports stay."
            ),
        ),
    ],
) -> None:
    """Drop raw GPU samples older than --keep-raw, once `gpufleet compute` has built them."""
    from pipelines.prune import parse_keep, prune_raw

    keep = parse_keep(keep_raw)
    settings = ctx.obj.settings()
    with _writing(ctx, "prune", create=False) as session, console.status("Pruning ..."):
        result = prune_raw(session.con, settings, keep)
        # Deleted rows leave free blocks DuckDB reuses but never returns: rewrite the file.
        session.publish = session.compact = result.samples_dropped > 0
    if result.pruned_before is None:
        out.print("Nothing to prune: the database holds no data yet.")
    elif result.samples_dropped == 0:
        cut = result.already_before or result.pruned_before
        out.print(f"Nothing to prune: no raw GPU samples before {cut:%Y-%m-%d} are left to drop.")
    else:
        out.print(
            f"Dropped {result.samples_dropped:,} raw GPU samples before "
            f"{result.pruned_before:%Y-%m-%d} (UTC); the database is now "
            f"{ctx.obj.db.stat().st_size / 2**20:,.0f} MiB."
        )


LOAD_HELP = (
    "Share of the default offered work, above 0 and at most 1 (below ~0.7 the queues stay short "
    "over weeks; at 1 they grow)."
)
INFERENCE_HELP = (
    "Add the utilisation workloads: per cluster a MIG-partitioned node serving light inference, "
    "and whole-node jobs that under-use their GPUs, with `utilisation_truth.parquet`."
)


@app.command()
def migrate(ctx: typer.Context) -> None:
    """Upgrade an older database in place (any writing command also does it, the first time).

    Adds `cluster` to every landing table (each record takes its node's cluster from `nodes`,
    a job its attempts' nodes') and stores GPU samples as series and values; the file is then
    rewritten without the old tables' space (docs/operations.md "Upgrading a database").
    """
    from pipelines.migrate import migrate_landing, pending_upgrades
    from pipelines.store import connect

    reader = connect(ctx.obj.db, read_only=True)
    try:
        upgraded = pending_upgrades(reader)
    finally:
        reader.close()
    with _writing(ctx, "migrate", create=False) as session:
        migrate_landing(session.con)  # opening for writing has upgraded already; this makes sure
    if upgraded:
        out.print(f"Upgraded {', '.join(upgraded)}. Run `gpufleet compute` next.")
    else:
        out.print("Nothing to upgrade: the database has the current landing schema.")


@app.command()
def simulate(
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder to write the landing Parquet files to.")
    ],
    nodes: Annotated[int, typer.Option(help="Number of 8-GPU nodes.")] = 64,
    days: Annotated[int, typer.Option(help="Days of telemetry.")] = 7,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same fleet.")] = 1,
    start: Annotated[
        str | None,
        typer.Option(help="First instant, UTC (default: Monday of the last full ISO week)."),
    ] = None,
    faults: Annotated[
        str,
        typer.Option(help="`default` injects the fault plan; `none` simulates a fault-free fleet."),
    ] = "default",
    load: Annotated[float, typer.Option(help=LOAD_HELP)] = 1.0,
    cluster_prefix: Annotated[
        str,
        typer.Option(
            help="Prefix for the cluster names (`east` -> `east-train-use1-a`): the same fleet "
            "as another cluster, same node names and job ids."
        ),
    ] = "",
    inference: Annotated[bool, typer.Option(help=INFERENCE_HELP)] = True,
) -> None:
    """Simulate a realistic fleet with injected faults and a ground-truth file."""
    from pipelines.simulate import SimulationConfig, simulate_to_dir

    cfg = SimulationConfig.create(
        nodes=nodes,
        days=days,
        seed=seed,
        start=start,
        faults=faults,
        load=load,
        cluster_prefix=cluster_prefix,
        inference=inference,
    )
    with console.status(f"Simulating {nodes} nodes x {days} days ..."):
        summary = simulate_to_dir(cfg, out_dir)
    for table, rows in summary.items():
        out.print(f"{table:<16} {rows:>12,} rows")
    out.print(f"Wrote {out_dir}")


@app.command()
def evaluate(
    ctx: typer.Context,
    seeds: Annotated[str, typer.Option(help="Seeds: `1..5`, `1,3` or `7`.")] = "1..5",
    nodes: Annotated[int, typer.Option(help="Nodes per simulated fleet.")] = 32,
    days: Annotated[int, typer.Option(help="Days per simulated fleet.")] = 2,
    faults: Annotated[
        str, typer.Option(help="`default` (fault plan + hard cases) or `none`.")
    ] = "default",
    output: Annotated[str, typer.Option("--format", help="`table` or `json`.")] = "table",
) -> None:
    """Score anomaly detection against the simulator's ground truth, per kind."""
    import json

    from pipelines.evaluate import evaluate as run_evaluate
    from pipelines.evaluate import failures, format_table, parse_seeds

    if output not in ("table", "json"):
        raise GpufleetError(f"Unknown format `{output}`.", "Use --format table or --format json.")
    if faults not in ("default", "none"):
        raise GpufleetError(
            f"Unknown fault plan `{faults}`.", "Use --faults default or --faults none."
        )
    seed_list = parse_seeds(seeds)
    with console.status("Evaluating ...") as status:
        summary, gpu_days = run_evaluate(
            seed_list,
            nodes=nodes,
            days=days,
            faults=faults,
            settings=ctx.obj.settings(),
            progress=lambda s: status.update(f"Evaluating {s} ..."),
        )
    if output == "json":
        out.print_json(json.dumps(summary))
        return
    typer.echo(format_table(summary))
    typer.echo(
        f"\n{len(seed_list)} seeds x {nodes} nodes x {days} days = {gpu_days:,.0f} GPU-days."
    )
    missed = failures(summary, fault_free=faults == "none")
    typer.echo("Targets met." if not missed else "Targets missed: " + "; ".join(missed))


class _Stopped(Exception):
    """SIGINT, SIGTERM or SIGHUP reached the process serving the dashboard."""


def _run_server(cmd: list[str], env: dict[str, str]) -> int:
    """Run the Streamlit server until it exits or gpufleet is stopped; never leave it running.

    Ctrl+C, SIGTERM (`kill`, systemd, Kubernetes) and SIGHUP stop the server first (SIGTERM,
    then SIGKILL after 10 s), then gpufleet exits.
    """

    received: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        # Only the first signal interrupts: a signal sent to the process group reaches the server
        # too, and later ones must not cut the cleanup below short.
        received.append(signum)
        if len(received) == 1:
            raise _Stopped(signum)

    # SIGINT too: polars installs its own native SIGINT handler at import, which swallows Ctrl+C
    # here. A signal ignored from the start (nohup, a background job) stays ignored.
    previous = {
        sig: signal.signal(sig, stop)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    server = subprocess.Popen(cmd, env=env)
    try:
        return server.wait()
    except KeyboardInterrupt:
        return 130
    except _Stopped as stopped:
        return 128 + int(stopped.args[0])
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(db: Path, port: int, headless: bool) -> None:
    env = {**os.environ, "GPUFLEET_DB": str(db.resolve())}
    # Located, not imported: pipelines/ never imports the app (or Streamlit).
    spec = importlib.util.find_spec("gpufleet_app")
    if spec is None or spec.origin is None:
        raise GpufleetError(
            "The dashboard package `gpufleet_app` is not installed.", "Reinstall gpufleet."
        )
    app_py = Path(spec.origin).resolve().parent / "streamlit_app.py"
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_py),
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--server.headless",
        "true" if headless else "false",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]
    out.print(f"Serving the dashboard on http://127.0.0.1:{port} (Ctrl+C stops it).")
    raise typer.Exit(_run_server(cmd, env))


@app.command(name="app")
def app_cmd(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8501,
    headless: Annotated[bool, typer.Option(help="Do not open a browser.")] = True,
) -> None:
    """Serve the Streamlit dashboard against the database (read-only)."""
    from pipelines.serving import missing_error

    if not ctx.obj.db.exists():
        raise missing_error(ctx.obj.db.absolute())
    _serve(ctx.obj.db, port, headless)


@contextmanager
def _stage(done: str, doing: str) -> Iterator[None]:
    """A spinner while a demo stage runs, then one line saying what it did and how long it took."""
    began = time.perf_counter()
    with console.status(doing):
        yield
    console.print(f"{done} in {time.perf_counter() - began:.0f} s")


@app.command()
def demo(
    ctx: typer.Context,
    # Three full ISO weeks, so the dashboard has week-over-week deltas and sparklines; 16 nodes keep
    # the GPU-days (and so the simulate/load/compute time) at three quarters of one week of 64 nodes.
    nodes: Annotated[int, typer.Option(help="Number of 8-GPU nodes.")] = 16,
    days: Annotated[int, typer.Option(help="Days of telemetry (21: three ISO weeks).")] = 21,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 1,
    # Below what the simulator's scheduler can serve, so no queue builds up over the three weeks
    # and the weekly ETTR, waits and deltas stay level (at 1 the ETTR fell 40 % -> 32 % -> 10 %).
    load: Annotated[float, typer.Option(help=LOAD_HELP)] = 0.5,
    inference: Annotated[bool, typer.Option(help=INFERENCE_HELP)] = True,
    data: Annotated[Path, typer.Option(help="Folder for the simulated landing files.")] = Path(
        "demo-data"
    ),
    no_app: Annotated[
        bool, typer.Option("--no-app", help="Stop after computing; print a summary.")
    ] = False,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8501,
) -> None:
    """Simulate a fleet, load it, compute, and open the dashboard."""
    from pipelines.compute import compute as run_compute
    from pipelines.demo import demo_summary
    from pipelines.simulate import SimulationConfig, simulate_to_dir
    from pipelines.sources.files import ingest_files

    db = ctx.obj.db
    fleet = f"{nodes} nodes x {days} days"
    with _stage(f"Simulated {fleet} into {escape(str(data))}", f"Simulating {fleet} ..."):
        cfg = SimulationConfig.create(
            nodes=nodes, days=days, seed=seed, load=load, inference=inference
        )
        simulate_to_dir(cfg, data)
    with _writing(ctx, "demo", create=True) as session:
        with _stage(f"Loaded {escape(str(data))} into {escape(str(db))}", "Loading ..."):
            ingest_files(session.con, data)
        with _stage("Computed the metrics and anomalies", "Computing ..."):
            run_compute(session.con, ctx.obj.settings())
        summary = demo_summary(session.con)
    out.print(summary)
    if not no_app:
        _serve(db, port, headless=True)


# ---- weekly review: report and export ------------------------------------------------------


def _warn_if_stale(con) -> None:
    from pipelines.compute import stale_data

    stale = stale_data(con)
    if stale is not None:
        warning = (
            f"Raw data changed since the last compute (data version {stale[1]}; the derived tables "
            f"are from version {stale[0]}): these numbers leave it out. Run `gpufleet compute`."
        )
        _print_warnings([warning])


@app.command()
def report(
    ctx: typer.Context,
    week: Annotated[str, typer.Option(help="ISO week, e.g. 2026-W48, or this / last (UTC).")],
    fmt: Annotated[str, typer.Option("--format", help="md, json or html.")] = "md",
    out_file: Annotated[
        Path | None,
        typer.Option("--out", help="File to write (default: stdout; html: report-<week>.html)."),
    ] = None,
    cluster: Annotated[str, typer.Option(help="A cluster, or * for all clusters.")] = "*",
    top: Annotated[int, typer.Option(help="How many worst nodes to list.")] = 10,
) -> None:
    """The weekly reliability report: summary with week-over-week deltas, goodput stack,
    failures by class and cause, and the nodes that lost the most GPU-hours."""
    from pipelines.report import FORMATS, build_report, open_read_only, render, write_atomically
    from pipelines.weeks import parse_week

    if fmt not in FORMATS:
        raise GpufleetError(f"Unknown report format `{fmt}`.", f"Use one of: {', '.join(FORMATS)}.")
    iso_week = parse_week(week)
    con = open_read_only(ctx.obj.db)
    try:
        text = render(
            build_report(con, iso_week, cluster=cluster, settings=ctx.obj.settings(), top=top), fmt
        )
        _warn_if_stale(con)
    finally:
        con.close()
    if out_file is None and fmt == "html":
        out_file = Path(f"report-{iso_week.label}.html")
    if out_file is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    write_atomically(out_file, text)
    console.print(f"Wrote {out_file}")


@app.command()
def remediation(
    ctx: typer.Context,
    week: Annotated[str, typer.Option(help="ISO week, e.g. 2026-W48, or this / last (UTC).")],
    fmt: Annotated[str, typer.Option("--format", help="json or csv.")] = "json",
    out_file: Annotated[
        Path | None, typer.Option("--out", help="File to write (default: stdout).")
    ] = None,
    cluster: Annotated[str, typer.Option(help="A cluster, or * for all clusters.")] = "*",
) -> None:
    """The week's remediation plan: every node with a recommended step, why, since when, granted or
    waiting under the disruption budget, and the command an operator would run (kubectl cordon/drain,
    scontrol update ... State=DRAIN). Dry run only: gpufleet never acts on a cluster; it writes the plan."""
    from pipelines.remediation import FORMATS, remediation_plan, render_plan
    from pipelines.report import open_read_only, write_atomically
    from pipelines.weeks import parse_week

    if fmt not in FORMATS:
        raise GpufleetError(f"Unknown format `{fmt}`.", f"Use one of: {', '.join(FORMATS)}.")
    iso_week = parse_week(week)
    con = open_read_only(ctx.obj.db)
    try:
        text = render_plan(remediation_plan(con, iso_week, cluster), fmt, iso_week, cluster)
        _warn_if_stale(con)
    finally:
        con.close()
    if out_file is None:
        sys.stdout.write(text)
        return
    write_atomically(out_file, text)
    console.print(f"Wrote {out_file}")


def _db_origin(explicit: str | None) -> str:
    if explicit:
        return "--db"
    return "environment GPUFLEET_DB" if os.environ.get("GPUFLEET_DB") else "default"


@app.command("config")
def config_cmd(ctx: typer.Context) -> None:
    """Print the effective settings as TOML, each with where it came from (default, file, environment)."""
    import dataclasses

    from pipelines.config import SECTION_NAMES, config_file
    from pipelines.settings_model import toml_key, toml_value

    settings = ctx.obj.settings()
    path, named_by = config_file(ctx.obj.config)
    found = "" if path.is_file() else ", not found: defaults"
    lines = [
        f"# settings file: {path} ({named_by}{found})",
        f"# database: {ctx.obj.db} ({_db_origin(ctx.obj.db_option)})",
        "# prometheus url: "
        + (
            "environment GPUFLEET_PROM_URL"
            if os.environ.get("GPUFLEET_PROM_URL")
            else "not set (pass --url)"
        ),
        "# prometheus credentials: "
        + (
            ", ".join(
                v
                for v in ("GPUFLEET_PROM_TOKEN", "GPUFLEET_PROM_USER", "GPUFLEET_PROM_PASSWORD")
                if os.environ.get(v)
            )
            or "none"
        )
        + " (values never shown)",
    ]
    for section in SECTION_NAMES:
        lines += ["", f"[{section}]"]
        for key, value in dataclasses.asdict(getattr(settings, section)).items():
            origin = settings.origins.get(f"{section}.{key}", "default")
            lines.append(f"{toml_key(key)} = {toml_value(value)}  # {origin}")
    out.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


@app.command()
def export(
    ctx: typer.Context,
    week: Annotated[str, typer.Option(help="ISO week, e.g. 2026-W48, or this / last (UTC).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder of the Hive-partitioned export.")],
    fmt: Annotated[str, typer.Option("--format", help="parquet or csv.")] = "parquet",
    tables: Annotated[
        str | None, typer.Option(help="Comma-separated tables (default: every documented view).")
    ] = None,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty", help="Publish the week even when the database has nothing for it."
        ),
    ] = False,
    stale_ok: Annotated[
        bool,
        typer.Option(
            "--stale-ok", help="Export even when raw data changed since the last compute."
        ),
    ] = False,
) -> None:
    """Export one week of the views, Hive-partitioned, atomically (re-running replaces that week)."""
    from pipelines.export import export_week
    from pipelines.report import open_read_only
    from pipelines.weeks import parse_week

    iso_week = parse_week(week)
    names = [t.strip() for t in tables.split(",") if t.strip()] if tables else None
    con = open_read_only(ctx.obj.db)
    try:
        with console.status(f"Exporting {iso_week.label} to {out_dir} ..."):
            results = export_week(
                con, iso_week, out_dir, fmt, names, allow_empty=allow_empty, stale_ok=stale_ok
            )
    finally:
        con.close()
    for r in results:
        out.print(f"{r.table:<26} {r.rows:>10,} rows  {r.partitions:>4} partitions")
    out.print(f"Exported {iso_week.label} to {out_dir} ({fmt}).")


def main() -> None:
    try:
        try:
            app(args=global_options_first(sys.argv[1:]), prog_name="gpufleet")
        except (OSError, MemoryError) as e:
            raise _explained(e) from None
        except Exception as e:
            import duckdb

            if isinstance(e, duckdb.Error):
                raise _explained(e) from None
            raise
    except _Stopped as stopped:
        # The signal arrived just as the server exited on its own (it got the same signal).
        sys.exit(128 + int(stopped.args[0]))
    except GpufleetError as e:
        # soft_wrap: one line per message however long the path in it, so logs and greps see it whole.
        console.print(f"[bold red]Error:[/] {escape(e.title)}", highlight=False, soft_wrap=True)
        if e.hint:
            console.print(e.hint, highlight=False, markup=False, soft_wrap=True)
        sys.exit(e.exit_code)


def _explained(e: BaseException) -> BaseException:
    """A full disk, a read-only folder, a damaged file or no memory: one line, not a traceback."""
    from pipelines.serving import explain

    return explain(e, _database) or e


if __name__ == "__main__":
    main()
