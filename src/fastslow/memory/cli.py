"""``fastslow memory stats|search|export DB``: look inside an AMM store (paper §3.1).

DB is an SQLite file or a ``postgresql://`` DSN (with ``--table``). Each command's last stdout line
is JSON (stats: the counts; search and export: one record per line).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from fastslow.errors import UsageError
from fastslow.memory.records import TAGS
from fastslow.memory.stores import BulkStore, open_location

memory_app = typer.Typer(no_args_is_help=True, help="Inspect an AMM memory store (SQLite file or DSN).")

DbArg = Annotated[str, typer.Argument(help="SQLite file or postgresql:// DSN of the store.")]
TableOpt = Annotated[str, typer.Option("--table", help="PostgreSQL table of the store.")]


def _open(db: str, table: str) -> BulkStore:
    if not db.startswith(("postgres://", "postgresql://")) and not Path(db).is_file():
        raise UsageError(f"memory store not found: {db}")
    return open_location(db, table)


@memory_app.command("stats")
def stats(db: DbArg, table: TableOpt = "amm_memories") -> None:
    """Records by tag, subtag, task and episode."""
    store = _open(db, table)
    try:
        tags: Counter[str] = Counter()
        subtags: Counter[str] = Counter()
        tasks: Counter[str] = Counter()
        episodes: set[str] = set()
        for r in store.iter_all():
            tags[r.tag] += 1
            subtags[f"{r.tag}/{r.subtag}"] += 1
            tasks[r.task_name] += 1
            episodes.add(r.episode_id)
        total = store.count()
    finally:
        store.close()
    result = {
        "records": total,
        "episodes": len(episodes),
        "by_tag": {t: tags[t] for t in TAGS},
        "by_subtag": dict(sorted(subtags.items())),
        "by_task": dict(tasks.most_common()),
    }
    typer.echo(f"{total} records from {len(episodes)} episodes; " + ", ".join(f"{t} {tags[t]}" for t in TAGS))
    typer.echo(json.dumps(result))


@memory_app.command("search")
def search(
    db: DbArg,
    query: Annotated[str, typer.Argument(help="Free text, e.g. the current observation.")],
    task: Annotated[str | None, typer.Option("--task", help="Only this task (ScienceWorld name).")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Only these tags (repeatable).")] = None,
    k: Annotated[int, typer.Option("-k", help="Number of records.")] = 5,
    table: TableOpt = "amm_memories",
) -> None:
    """The best K records for a query, one JSON record per line."""
    for t in tag or []:
        if t not in TAGS:
            raise UsageError(f"--tag must be one of {', '.join(TAGS)}, got '{t}'")
    store = _open(db, table)
    try:
        for record in store.search(query, tags=tag or None, task=task, k=k):
            typer.echo(record.to_json())
    finally:
        store.close()


@memory_app.command("export")
def export(
    db: DbArg,
    out: Annotated[Path | None, typer.Option("--out", help="JSONL file (default: stdout).")] = None,
    table: TableOpt = "amm_memories",
) -> None:
    """Every record as JSON lines, oldest first."""
    store = _open(db, table)
    try:
        lines = (record.to_json() + "\n" for record in store.iter_all())
        if out is None:
            for line in lines:
                typer.echo(line, nl=False)
        else:
            with open(out, "w", encoding="utf-8") as fh:
                n = sum(1 for line in lines if fh.write(line))
            typer.echo(json.dumps({"records": n, "out": str(out)}))
    finally:
        store.close()
