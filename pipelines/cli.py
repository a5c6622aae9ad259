"""The `gpufleet` command line.

Global options come first: `gpufleet --db fleet.duckdb ingest files DIR`.
Every `GpufleetError` becomes a one-paragraph message and exit code 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from pipelines.config import Settings, db_path, load_settings
from pipelines.errors import GpufleetError

app = typer.Typer(
    name="gpufleet",
    help="GPU fleet reliability analytics and goodput.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
ingest_app = typer.Typer(help="Load a source into the landing tables.", no_args_is_help=True)
app.add_typer(ingest_app, name="ingest")

console = Console(stderr=True)
out = Console()


class Context:
    """What the global options resolve to, shared by every command."""

    def __init__(self, db: Path, config: str | None) -> None:
        self.db = db
        self.config = config

    def settings(self) -> Settings:
        return load_settings(self.config)


@app.callback()
def main_options(
    ctx: typer.Context,
    db: Annotated[
        str | None, typer.Option("--db", help="DuckDB file (default: $GPUFLEET_DB or fleet.duckdb).")
    ] = None,
    config: Annotated[
        str | None, typer.Option("--config", help="Settings file (default: ./gpufleet.toml).")
    ] = None,
) -> None:
    ctx.obj = Context(db_path(db), config)


def _print_loads(results) -> None:
    for r in results:
        out.print(f"{r.table:<16} {r.rows_in:>12,} rows read  {r.rows_new:>12,} new")


@ingest_app.command("files")
def ingest_files_cmd(
    ctx: typer.Context,
    folder: Annotated[Path, typer.Argument(help="Folder of <table>.csv|.jsonl|.parquet files.")],
) -> None:
    """Load landing-contract files (CSV, JSONL, Parquet) as one batch."""
    from pipelines.sources.files import ingest_files
    from pipelines.store import open_store

    con = open_store(ctx.obj.db)
    with console.status(f"Loading {folder} ..."):
        results = ingest_files(con, folder)
    _print_loads(results)


@app.command()
def compute(
    ctx: typer.Context,
    force: Annotated[bool, typer.Option(help="Recompute even if nothing changed.")] = False,
) -> None:
    """(Re)build the derived tables and views from the landing tables."""
    from pipelines.compute import compute as run_compute
    from pipelines.store import open_store

    settings = ctx.obj.settings()
    con = open_store(ctx.obj.db)
    with console.status("Computing ...") as status:
        result = run_compute(con, settings, force=force, progress=lambda s: status.update(f"Computing {s} ..."))
    if result.skipped:
        out.print(f"Nothing changed since the last compute (data version {result.data_version}).")
        return
    for name, seconds in result.timings_s.items():
        out.print(f"{name:<28} {seconds:8.2f} s")
    out.print(f"Computed data version {result.data_version} in {sum(result.timings_s.values()):.2f} s.")


@app.command()
def simulate(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the landing Parquet files to.")],
    nodes: Annotated[int, typer.Option(help="Number of 8-GPU nodes.")] = 64,
    days: Annotated[int, typer.Option(help="Days of telemetry.")] = 7,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same fleet.")] = 1,
    start: Annotated[str | None, typer.Option(help="First instant, UTC (default: 7 days before the last Monday).")] = None,
) -> None:
    """Simulate a realistic fleet with injected faults and a ground-truth file."""
    from pipelines.simulate import SimulationConfig, simulate_to_dir

    cfg = SimulationConfig.create(nodes=nodes, days=days, seed=seed, start=start)
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
    faults: Annotated[str, typer.Option(help="`default` (fault plan + hard cases) or `none`.")] = "default",
    output: Annotated[str, typer.Option("--format", help="`table` or `json`.")] = "table",
) -> None:
    """Score anomaly detection against the simulator's ground truth, per kind."""
    import json

    from pipelines.evaluate import evaluate as run_evaluate
    from pipelines.evaluate import failures, format_table, parse_seeds

    if output not in ("table", "json"):
        raise GpufleetError(f"Unknown format `{output}`.", "Use --format table or --format json.")
    if faults not in ("default", "none"):
        raise GpufleetError(f"Unknown fault plan `{faults}`.", "Use --faults default or --faults none.")
    seed_list = parse_seeds(seeds)
    with console.status("Evaluating ...") as status:
        summary, gpu_days = run_evaluate(
            seed_list, nodes=nodes, days=days, faults=faults, settings=ctx.obj.settings(),
            progress=lambda s: status.update(f"Evaluating {s} ..."),
        )
    if output == "json":
        out.print_json(json.dumps(summary))
        return
    typer.echo(format_table(summary))
    typer.echo(f"\n{len(seed_list)} seeds x {nodes} nodes x {days} days = {gpu_days:,.0f} GPU-days.")
    missed = failures(summary, fault_free=faults == "none")
    typer.echo("Targets met." if not missed else "Targets missed: " + "; ".join(missed))


def _serve(db: Path, port: int, headless: bool) -> None:
    env = {**os.environ, "GPUFLEET_DB": str(db.resolve())}
    app_py = Path(__file__).resolve().parent.parent / "app.py"
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(app_py),
        "--server.address", "127.0.0.1", "--server.port", str(port),
        "--server.headless", "true" if headless else "false",
        "--browser.gatherUsageStats", "false",
    ]
    out.print(f"Serving the dashboard on http://127.0.0.1:{port} (Ctrl+C stops it).")
    raise typer.Exit(subprocess.call(cmd, env=env))


@app.command(name="app")
def app_cmd(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8501,
    headless: Annotated[bool, typer.Option(help="Do not open a browser.")] = True,
) -> None:
    """Serve the Streamlit dashboard against the database (read-only)."""
    _serve(ctx.obj.db, port, headless)


@app.command()
def demo(
    ctx: typer.Context,
    nodes: Annotated[int, typer.Option(help="Number of 8-GPU nodes.")] = 64,
    days: Annotated[int, typer.Option(help="Days of telemetry.")] = 7,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 1,
    data: Annotated[Path, typer.Option(help="Folder for the simulated landing files.")] = Path("demo-data"),
    no_app: Annotated[bool, typer.Option("--no-app", help="Stop after computing; print a summary.")] = False,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8501,
) -> None:
    """Simulate a fleet, load it, compute, and open the dashboard."""
    from pipelines.compute import compute as run_compute
    from pipelines.demo import demo_summary
    from pipelines.simulate import SimulationConfig, simulate_to_dir
    from pipelines.sources.files import ingest_files
    from pipelines.store import open_store

    db = ctx.obj.db
    with console.status(f"Simulating {nodes} nodes x {days} days ..."):
        simulate_to_dir(SimulationConfig.create(nodes=nodes, days=days, seed=seed), data)
    con = open_store(db)
    with console.status("Loading ..."):
        ingest_files(con, data)
    with console.status("Computing ..."):
        run_compute(con, ctx.obj.settings())
    out.print(demo_summary(con))
    con.close()
    if not no_app:
        _serve(db, port, headless=True)


def main() -> None:
    try:
        app()
    except GpufleetError as e:
        console.print(f"[bold red]Error:[/] {escape(e.title)}", highlight=False)
        if e.hint:
            console.print(e.hint, highlight=False, markup=False)
        sys.exit(e.exit_code)


if __name__ == "__main__":
    main()
