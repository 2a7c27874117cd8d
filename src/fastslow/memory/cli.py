"""``fastslow memory stats|search|export DB``: look inside an AMM store (paper §3.1).

DB is an SQLite file or a ``postgresql://`` DSN (with ``--table``). Each command's last stdout line
is JSON (stats: the counts; search and export: one record per line).

Inspection never changes the store: an SQLite file is opened read-only (``mode=ro``: no table created,
no switch to WAL), so pointing a command at some other SQLite file is a one-line refusal, not a file
with fastslow's tables added; a PostgreSQL session is read-only and creates no table. Rows that are
not records are skipped with a warning and counted (``skipped_rows``).
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from fastslow.errors import UsageError
from fastslow.memory.records import TAGS
from fastslow.memory.stores import BulkStore, MemoryStoreError, is_dsn, open_location

memory_app = typer.Typer(no_args_is_help=True, help="Inspect an AMM memory store (SQLite file or DSN).")

DbArg = Annotated[str, typer.Argument(help="SQLite file or postgresql:// DSN of the store.")]
TableOpt = Annotated[str, typer.Option("--table", help="PostgreSQL table of the store.")]
PasswordEnvOpt = Annotated[
    str | None,
    typer.Option("--password-env", help="PostgreSQL: environment variable holding the password."),
]


def _open(db: str, table: str, password_env: str | None = None) -> BulkStore:
    if not is_dsn(db) and not Path(db).is_file():
        raise UsageError(f"memory store not found: {db}")
    try:
        return open_location(db, table, readonly=True, password_env=password_env)
    except MemoryStoreError as exc:
        # Not a store (another program's database, not SQLite at all, a table that does not exist, a
        # server that does not answer): the user named the wrong thing; one line, exit 2.
        raise UsageError(str(exc)) from exc


@memory_app.command("stats")
def stats(db: DbArg, table: TableOpt = "amm_memories", password_env: PasswordEnvOpt = None) -> None:
    """Records by tag, subtag, task and episode."""
    store = _open(db, table, password_env)
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
        skipped = store.bad_rows
    finally:
        store.close()
    total = sum(tags.values())
    result = {
        "records": total,
        "skipped_rows": skipped,
        "episodes": len(episodes),
        "by_tag": {t: tags[t] for t in TAGS},
        "by_subtag": dict(sorted(subtags.items())),
        "by_task": dict(tasks.most_common()),
    }
    line = f"{total} records from {len(episodes)} episodes; " + ", ".join(f"{t} {tags[t]}" for t in TAGS)
    if skipped:
        line += f"; {skipped} unreadable rows skipped"
    typer.echo(line)
    typer.echo(json.dumps(result))


@memory_app.command("search")
def search(
    db: DbArg,
    query: Annotated[str, typer.Argument(help="Free text, e.g. the current observation.")],
    task: Annotated[str | None, typer.Option("--task", help="Only this task (ScienceWorld name).")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Only these tags (repeatable).")] = None,
    k: Annotated[int, typer.Option("-k", help="Number of records.")] = 5,
    table: TableOpt = "amm_memories",
    password_env: PasswordEnvOpt = None,
) -> None:
    """The best K records for a query, one JSON record per line."""
    for t in tag or []:
        if t not in TAGS:
            raise UsageError(f"--tag must be one of {', '.join(TAGS)}, got '{t}'")
    store = _open(db, table, password_env)
    try:
        for record in store.search(query, tags=tag or None, task=task, k=k):
            typer.echo(record.to_json())
    finally:
        store.close()


def _temp_beside(out: Path) -> tuple[Path, int]:
    """A new file next to ``out`` (same directory, so the final rename is atomic), opened for writing.

    Created with mode 0o666 less the umask, as ``open(out, "w")`` would; an unwritable or missing
    directory is a ``UsageError`` before any record is read.
    """
    if out.is_dir():
        raise UsageError(f"--out {out} is a directory")
    temp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise UsageError(f"cannot write --out {out}: {exc.strerror or exc}") from exc


@memory_app.command("export")
def export(
    db: DbArg,
    out: Annotated[Path | None, typer.Option("--out", help="JSONL file (default: stdout).")] = None,
    table: TableOpt = "amm_memories",
    password_env: PasswordEnvOpt = None,
) -> None:
    """Every record as JSON lines, oldest first."""
    # The destination is checked before the store is opened: bad input fails before anything is read.
    target = _temp_beside(out) if out is not None else None
    try:
        store = _open(db, table, password_env)
    except BaseException:
        if target is not None:
            os.close(target[1])
            target[0].unlink(missing_ok=True)
        raise
    try:
        lines = (record.to_json() + "\n" for record in store.iter_all())
        if target is None or out is None:
            for line in lines:
                typer.echo(line, nl=False)
            return
        temp, fd = target
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                n = sum(1 for line in lines if fh.write(line))
            # Only a complete export takes the name: a failure half-way leaves no partial file behind.
            os.replace(temp, out)
        except OSError as exc:
            raise UsageError(f"cannot write --out {out}: {exc.strerror or exc}") from exc
        finally:
            temp.unlink(missing_ok=True)
        typer.echo(json.dumps({"records": n, "skipped_rows": store.bad_rows, "out": str(out)}))
    finally:
        store.close()
