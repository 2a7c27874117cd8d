"""The commands that read finished runs: ``report`` (tables, figures, HTML) and ``view`` (the viewer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fastslow.cli._common import app, console, err_console, out_path
from fastslow.errors import UsageError


@app.command()
def report(
    dirs: Annotated[list[Path], typer.Argument(help="Finished run directories (with metrics.json).")],
    out: Annotated[
        Path | None, typer.Option("--out", parser=out_path, help="Report directory (default: DIR/report).")
    ] = None,
) -> None:
    """The paper's tables (markdown + CSV), figures, and an HTML report with a trajectory viewer.

    Every output counts the episodes whose logs can be read whole; each log left out, and each other
    warning of the report, is one line on stderr and in the report's Warnings. A report that fails
    leaves --out as it was."""
    import csv

    from rich.table import Table

    from fastslow.eval.report import write_report

    def warn(line: str) -> None:
        err_console.print(f"warning: {line}", style="yellow", highlight=False, markup=False, soft_wrap=True)

    target = out or dirs[0] / "report"
    html_path = write_report(dirs, target, on_warning=warn)
    with open(target / "main.csv", newline="", encoding="utf-8") as fh:
        head, *rows = list(csv.reader(fh))
    col = {name: i for i, name in enumerate(head)}
    table = Table("config", "episodes", "score, paper (95% CI)", "strict (95% CI)", "success", "-100")
    table.title = "Main results (report.md has every table)"
    for row in rows:
        ci, ci_strict = row[col["95% CI"]], row[col["95% CI (strict)"]]
        table.add_row(
            row[col["config"]],
            row[col["episodes"]],
            row[col["score (paper)"]] + (f" ({ci})" if ci != "-" else ""),
            row[col["score (strict)"]] + (f" ({ci_strict})" if ci_strict != "-" else ""),
            row[col["success"]],
            row[col["-100 failures"]],
        )
    console.print(table)
    console.print(f"report written to {target} (open {html_path})")


@app.command()
def view(
    dirs: Annotated[list[Path], typer.Argument(help="Finished run directories (with metrics.json).")],
    port: Annotated[int, typer.Option("--port", help="Port, 0-65535; 0 picks a free one.")] = 8765,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to bind (default loopback only); requests are answered only for this name, "
            "127.0.0.1, localhost and [::1].",
        ),
    ] = "127.0.0.1",
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the page in the default browser.")
    ] = False,
) -> None:
    """Serve the trajectory viewer over run directories on 127.0.0.1 (or --host) until Ctrl-C: runs and their
    tables, episodes filtered by task, outcome, source and mechanism, one episode's timeline, the same
    episode in several runs side by side."""
    import time
    import webbrowser

    from fastslow.view.server import check_port, serve

    check_port(port)  # before any run is read or any socket bound
    try:
        server = serve(dirs, port, host)
    except OSError as exc:
        raise UsageError(f"--host {host} --port {port}: {exc.strerror or exc}") from exc
    console.print(f"fastslow viewer on {server.url} ({len(dirs)} runs; Ctrl-C stops it)")
    if open_browser:
        webbrowser.open(server.url)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
