"""``fastslow memory stats|search|export`` only ever reads (paper §3.1 store inspection).

A file that is not fastslow's store - another program's SQLite database, or no SQLite at all - is
refused with one line and exit code 2, and left exactly as it was: same bytes, no journal or WAL files,
same journal mode, no fastslow tables added. ``export --out`` to a place that cannot be written is a
one-line refusal that leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from pathlib import Path

import pytest

from fastslow.bench.memory import synthetic_records
from fastslow.cli import main
from fastslow.memory.stores import MemoryStoreError
from fastslow.memory.stores.postgres import PostgresStore
from fastslow.memory.stores.sqlite import SqliteStore

COMMANDS = {
    "stats": ["memory", "stats"],
    "search": ["memory", "search", "{db}", "focus on thermometer"],
    "export": ["memory", "export"],
}


def argv(command: str, db: Path, *extra: str) -> list[str]:
    args = [a.format(db=db) for a in COMMANDS[command]]
    if "{db}" not in COMMANDS[command]:
        args.append(str(db))
    return [*args, *extra]


def refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the CLI in-process; it must exit 2 with exactly one stderr line, which is returned."""
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def foreign_database(path: Path) -> None:
    """Another program's SQLite file: its own table, the default rollback journal."""
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        db.executemany("INSERT INTO notes (body) VALUES (?)", [(f"note {i}",) for i in range(100)])
    db.close()


def schema_and_journal(path: Path) -> tuple[list[str], str]:
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        names = [row[0] for row in db.execute("SELECT name FROM sqlite_master ORDER BY name")]
        return names, db.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        db.close()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_foreign_sqlite_file_is_refused_and_untouched(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.db"
    foreign_database(path)
    before = path.read_bytes()
    assert schema_and_journal(path) == (["notes"], "delete")
    line = refused(argv(command, path), capsys)
    assert line == f"error: {path} is not a fastslow memory store (no memories table)"
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]  # no -wal, -shm or -journal
    assert schema_and_journal(path) == (["notes"], "delete")


@pytest.mark.parametrize("content", [b"just some text\n" * 20, bytes(range(256)) * 16])
def test_non_sqlite_file_is_refused(
    content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "memory.sqlite"
    path.write_bytes(content)
    line = refused(argv("stats", path), capsys)
    assert line.startswith(f"error: {path} is not a SQLite database")
    assert path.read_bytes() == content and [p.name for p in tmp_path.iterdir()] == ["memory.sqlite"]


def test_real_store_is_read_without_a_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.sqlite"
    store = SqliteStore(path)
    store.add_many(synthetic_records(200, seed=4))
    store.close()
    before = path.read_bytes()
    for command in COMMANDS:
        main(argv(command, path))
    out = capsys.readouterr().out.splitlines()
    assert json.loads(out[1])["records"] == 200  # stats: the summary line, then the JSON line
    assert path.read_bytes() == before


def _unwritable_outs(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    (tmp_path / "a-dir").mkdir()
    return {
        "missing directory": tmp_path / "no" / "such" / "dir" / "out.jsonl",
        "under a file": a_file / "out.jsonl",
        "a directory": tmp_path / "a-dir",
    }


@pytest.mark.parametrize("case", ["missing directory", "under a file", "a directory"])
def test_export_to_unwritable_out_is_refused(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.sqlite"
    store = SqliteStore(path)
    store.add_many(synthetic_records(20, seed=4))
    store.close()
    out = _unwritable_outs(tmp_path)[case]
    listing = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    line = refused(["memory", "export", str(path), "--out", str(out)], capsys)
    assert line.startswith("error: ") and str(out) in line
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == listing  # nothing half-written


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_export_into_read_only_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.sqlite"
    store = SqliteStore(path)
    store.add_many(synthetic_records(20, seed=4))
    store.close()
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        line = refused(["memory", "export", str(path), "--out", str(locked / "out.jsonl")], capsys)
        assert "Permission denied" in line and list(locked.iterdir()) == []
    finally:
        locked.chmod(0o755)


def test_export_replaces_out_only_when_complete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.sqlite"
    store = SqliteStore(path)
    store.add_many(synthetic_records(30, seed=4))
    store.close()
    out = tmp_path / "all.jsonl"
    out.write_text("old export\n")
    foreign = tmp_path / "notes.db"
    foreign_database(foreign)
    refused(["memory", "export", str(foreign), "--out", str(out)], capsys)
    assert out.read_text() == "old export\n"  # a refused export keeps the previous file
    main(["memory", "export", str(path), "--out", str(out)])
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == {
        "records": 30,
        "skipped_rows": 0,
        "out": str(out),
    }
    assert len(out.read_text().splitlines()) == 30
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_postgres_inspection_creates_nothing(pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A DSN is inspected in a read-only session: a table that is not there is refused, not created."""
    table = f"test_ro_{uuid.uuid4().hex[:10]}"
    line = refused(["memory", "stats", pg_dsn, "--table", table], capsys)
    assert line == f"error: postgres table {table} is not a fastslow memory store"
    store = PostgresStore(pg_dsn, table)  # a writable store: creates the tables
    try:
        assert store._db.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (table,)
        store.add_many(synthetic_records(25, seed=4))
        main(["memory", "stats", pg_dsn, "--table", table])
        assert json.loads(capsys.readouterr().out.splitlines()[-1])["records"] == 25
        reader = PostgresStore(pg_dsn, table, readonly=True)
        with pytest.raises(MemoryStoreError, match="read-only"):
            reader.add_many(synthetic_records(1, seed=5))
        reader.close()
        assert store.count() == 25
    finally:
        store.drop()
        store.close()
    import psycopg  # only where the pg_dsn fixture found it installed

    with psycopg.connect(pg_dsn) as db:
        assert db.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (None,)
