"""Run directories that cannot mix, leak or lie (paper §4's evaluation, made safe to resume).

A run directory says what it is: ``run.json`` (a versioned ``RunRecord``) holds the run's identity -
the resolved configuration's hash, the overrides, the warm-up player, the code (fastslow version and
git commit) - and its episode selection. ``claim_run`` checks that identity before anything is written:

- same identity and selection: resume (finished episodes are skipped);
- a different config, overrides, warm-up or code: refused with one line (exit 2); ``restart`` discards
  the run's own files first;
- a different selection: refused unless ``extend`` (the run's selection becomes the union);
- a directory without a readable fastslow ``run.json`` that holds files a run writes (``events/``,
  ``warmup/``, ``metrics.json``, ``config.yaml``, ``run.json``, ``model_cache.sqlite``): refused,
  ``restart`` included, with a message that suggests no deleting flag: fastslow cannot tell what in it
  is whose.

``restart`` deletes only what the run's commands recorded writing (``run_files``; the manifest of
``fastslow.manifest``: every file written into a claimed directory, with its sha256): its event logs
(and their attempts kept in ``events/failed/``), the warm-up's logs, ``metrics.json``, ``config.yaml``,
``run.json``, the per-run store and response cache, and the files ``fastslow report`` recorded in
``report/``, each only while it is still what was written. A file's name proves nothing: any other
file in DIR, a user's ``report/report.md`` or a log the user edited included, stays. ``check_claim``
makes every refusal without writing or locking anything, so a refused command leaves DIR as it found
it.

The other commands that write a directory (``attribute``, ``data gold``, ``data dagger``) take it with
``claim_directory``: the same lock and manifest, a claim file naming the command and the key of its
work, and refusals of foreign files, of the run the command reads and of another key.

A lock file (``.fastslow.lock``, an ``flock`` the kernel drops when its owner dies, however it dies)
keeps a second process out of a directory in use; the lock is re-entrant within one process, so the
warm-up and the evaluation of one ``fastslow eval`` share it.

The AMM store of a run lives inside it (``memory.sqlite``) unless the config names one explicitly;
``run.json`` records where it is and how many records it held when each start of the run began. A run
never adopts a store it did not make: an existing ``memory.sqlite`` holding records, or a file that is
not a fastslow store (``amm.path`` included), is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from fastslow.config import RunConfig
from fastslow.errors import OutputError, RunDirError, UsageError
from fastslow.eval.records import METRICS_FILE
from fastslow.eval.runner import git_commit, versions
from fastslow.manifest import (
    BOOKKEEPING,
    LOCK_FILE,
    Manifest,
    claimed_root,
    record_removed,
    record_writing,
    record_written,
)
from fastslow.models.cache import CACHE_FILE, is_cache_file
from fastslow.redact import redact_argv, redact_override, redact_text

RUN_FORMAT = 2
"""Version of run.json; 1 was the unversioned record of fastslow <= 0.1 (no identity)."""
RUN_FILE = "run.json"
STORE_FILE = "memory.sqlite"
CONFIG_FILE = "config.yaml"
WARMUP_DIR = "warmup"
"""DIR/warmup: the warm-up's logs (``evaluate.run_warmup``)."""


class StoreInfo(BaseModel):
    """Where a run's AMM memory lives and what it held when the run (re)started."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["sqlite", "postgres"]
    location: str
    """SQLite file, or the PostgreSQL DSN with any password redacted, plus ``#table``."""
    per_run: bool
    """True: the run's own store inside the run directory; False: a store named by the config,
    possibly shared with other runs."""

    @field_validator("location")
    @classmethod
    def _redact(cls, location: str) -> str:
        # Redacted when built and when read back: a run.json of an older fastslow may hold a password.
        return redact_text(location)


class RunStart(BaseModel):
    """One start of the run (the first, or a resume)."""

    model_config = ConfigDict(extra="forbid")

    started: str
    command: list[str]
    """The command line of this start, its secrets redacted (``fastslow.redact.redact_argv``)."""
    pid: int
    host: str
    workers: int
    executor: str
    store_records: int | None = None
    """Records in the AMM store when this start began (None without AMM): a populated store is visible."""
    store_records_after_warmup: int | None = None
    """Records in the store once this start's warm-up was played (None without ``--warmup``)."""
    memory_ranking: str | None = None
    """AMM's retrieval ranking in this start, ``bm25`` or ``hybrid`` (None without AMM)."""
    memory_embedder: str | None = None
    """The embedder of hybrid ranking in this start (``all-MiniLM-L6-v2``, or the lexical stand-in's
    name when the ``embed`` extra is not installed); None with BM25 ranking or without AMM."""

    @field_validator("command")
    @classmethod
    def _redact(cls, command: list[str]) -> list[str]:
        # sys.argv as given, so redacted here, when built and when an older run.json is read back.
        return redact_argv(command)


class RunRecord(BaseModel):
    """``run.json``: what a run directory holds; read back by resume and by ``fastslow report``."""

    model_config = ConfigDict(extra="forbid")

    format: int = RUN_FORMAT
    kind: Literal["eval"] = "eval"
    run_id: str
    """Random id of the run; AMM records it writes carry it (``<run_id>/<episode>``)."""
    config_name: str
    config_hash: str
    """sha256 of the resolved configuration (as given, before the per-run store path is filled in)."""
    overrides: list[str] = []
    """The ``-o`` overrides, each with its secrets redacted (``fastslow.redact.redact_override``)."""
    warmup: dict[str, Any] | None = None
    """The warm-up that fills the store: ``{"played_by": name, "config_hash": ...}``; None without."""
    code: dict[str, str | None]
    """fastslow, scienceworld, python, ... versions, the git commit and the hash of fastslow's sources."""
    episodes: list[str]
    """The selection: episode ids (``13-0027``, ``13-0027-s1`` when seeded) in play order."""
    store: StoreInfo | None = None
    stream: bool = False
    """``fastslow eval --stream`` (``eval.stream``): each task's episodes play as a stream in the order of
    ``episodes``, each reading only the records of the warm-up and of earlier positions. Part of the
    run's identity: a run is resumed with the same choice. False in every run.json before streams."""
    starts: list[RunStart] = []

    @field_validator("overrides")
    @classmethod
    def _redact(cls, overrides: list[str]) -> list[str]:
        # Redacted when built and when read back: a run.json of an older fastslow may hold a password.
        return [redact_override(o) for o in overrides]


def config_hash(config: RunConfig) -> str:
    """A short stable hash of a resolved configuration (secrets are redacted by its serializer)."""
    text = json.dumps(config.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


SOURCE_SUFFIXES = (".py", ".j2", ".yaml", ".json", ".java", ".npz")


@cache
def source_hash() -> str:
    """sha256 of fastslow's own files (code, prompts, configs, task table, shipped Swift weights): a
    commit says nothing about uncommitted edits, and an edit can change what a resumed run does."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()):
        if "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def code_identity() -> dict[str, str | None]:
    """The code part of a run's identity: package versions, git commit and the hash of the sources."""
    return {**versions(), "git_commit": git_commit(), "source": source_hash()}


def store_config(config: RunConfig, out: Path) -> RunConfig:
    """``config`` with its AMM store placed: an SQLite store without a path becomes the run's own
    ``DIR/memory.sqlite``; an explicit path or a PostgreSQL store is kept (shared on purpose)."""
    amm = config.amm
    if not amm.enabled or amm.store != "sqlite" or amm.path:
        return config
    placed = amm.model_copy(update={"path": str((out / STORE_FILE).resolve())})
    return config.model_copy(update={"amm": placed})


def store_info(config: RunConfig, out: Path) -> StoreInfo | None:
    """Where the store of ``config`` (as given, before ``store_config`` places it) is: the run's own
    when the config names no file (None without AMM)."""
    amm = config.amm
    if not amm.enabled:
        return None
    if amm.store == "postgres":
        from fastslow.memory.config import redact_dsn

        dsn = amm.dsn or os.environ.get("FASTSLOW_PG_DSN", "")
        return StoreInfo(kind="postgres", location=f"{redact_dsn(dsn)}#{amm.table}", per_run=False)
    placed = store_config(config, out).amm.path
    assert placed, "store_config places an SQLite store"
    # Per-run only when fastslow chose the file: a store the config names stays the user's, even when
    # it is DIR/memory.sqlite, and no restart ever deletes it.
    return StoreInfo(kind="sqlite", location=placed, per_run=not amm.path)


def _first_difference(old: Any, new: Any, prefix: str = "") -> str | None:
    """The first dotted key whose value differs between two config dumps, as ``key: old -> new``."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            found = _first_difference(old.get(key), new.get(key), f"{prefix}{key}.")
            if found:
                return found
        return None
    if old != new:
        return f"{prefix[:-1]}: {old!r} -> {new!r}"
    return None


# -- the lock ---------------------------------------------------------------------------------------


@dataclass
class _Held:
    fh: IO[str]
    depth: int


_HELD: dict[Path, _Held] = {}
"""Run directories this process holds, by resolved path (the lock is re-entrant within a process)."""
_CLAIMED: dict[Path, RunRecord] = {}
"""The run claimed in each held directory; dropped with the lock."""


@contextmanager
def run_lock(out: Path) -> Iterator[None]:
    """Hold DIR's lock for the duration; another live process holding it -> ``RunDirError``.

    ``flock`` is released by the kernel when the holder dies (kill -9 included), so a lock left by a
    dead run is taken over without any stale-pid guessing; the pid in the file is only for the message.
    """
    key = out.resolve()
    held = _HELD.get(key)
    if held is not None:
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
        return
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_FILE
    fh = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - closed when the lock is released
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        owner = fh.read().strip() or "another process"
        fh.close()
        raise RunDirError(
            f"--out {out} is in use by {owner}: wait for it to finish or choose another --out"
        ) from None
    fh.seek(0)
    fh.truncate()
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    fh.write(f"fastslow pid {os.getpid()} on {socket.gethostname()} since {started}\n")
    fh.flush()
    _HELD[key] = _Held(fh, 1)
    try:
        yield
    finally:
        del _HELD[key]
        _CLAIMED.pop(key, None)
        fh.close()  # closing the descriptor drops the flock


# -- identity ---------------------------------------------------------------------------------------


def read_run_record(out: Path) -> RunRecord | None:
    """DIR's run record; None when there is none; ``RunDirError`` (one line naming the file, with no
    advice: the caller knows what to suggest) when it cannot be read as one."""
    path = out / RUN_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path} cannot be read ({exc})") from None
    if not isinstance(data, dict) or not ({"run_id", "config_name"} & data.keys()):
        raise RunDirError(f"{path} is not a fastslow run record")
    fmt = data.get("format")
    if fmt != RUN_FORMAT:
        newer = isinstance(fmt, int) and fmt > RUN_FORMAT
        which = f"a newer fastslow (format {fmt})" if newer else "an older fastslow without a run identity"
        raise RunDirError(f"{path} was written by {which}")
    try:
        return RunRecord.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise RunDirError(f"{path} is not a fastslow run record ({where}: {err['msg']})") from None


def _foreign_files(out: Path) -> list[str]:
    """What in a DIR without a run record a run would write into or over: anything in ``events/`` or
    ``warmup/`` (an empty ``events/``, as ``prepare_out_dir`` makes, is nothing), ``metrics.json``,
    ``config.yaml``, the response cache (its answers would be served to this run)."""
    found: list[str] = []
    for name in ("events", WARMUP_DIR, METRICS_FILE, CONFIG_FILE, CACHE_FILE):
        path = out / name
        if path.is_dir():
            entries = sorted(p.name for p in path.iterdir())
            if entries:
                more = f" (+{len(entries) - 1} more)" if len(entries) > 1 else ""
                found.append(f"{name}/{entries[0]}{more}")
        elif path.exists() or path.is_symlink():
            found.append(name)
    return found


def _refuse(out: Path, what: str) -> RunDirError:
    return RunDirError(f"--out {out} holds {what}: use another --out, or --restart to discard it")


def _check(old: RunRecord, new: RunRecord, new_dump: dict[str, Any], out: Path, extend: bool) -> list[str]:
    """The selection to record if ``new`` may continue ``old``; otherwise raise ``RunDirError``."""
    if old.config_hash != new.config_hash:
        detail = ""
        try:
            before = yaml.safe_load((out / CONFIG_FILE).read_text(encoding="utf-8"))
            if not isinstance(before, dict):
                raise yaml.YAMLError("not a mapping")
            labels = ("name", "description")  # the name is already in the message
            diff = _first_difference(
                {k: v for k, v in before.items() if k not in labels},
                {k: v for k, v in new_dump.items() if k not in labels},
            )
            detail = f", first difference {diff}" if diff else ""
        except (OSError, yaml.YAMLError):
            pass
        same = old.config_name == new.config_name
        what = f"'{old.config_name}' with other settings" if same else f"'{old.config_name}'"
        raise _refuse(out, f"a run of config {what} (this is '{new.config_name}'{detail})")
    if old.warmup != new.warmup:
        raise _refuse(out, f"a run with another warm-up ({old.warmup} vs {new.warmup})")
    if old.stream != new.stream:
        played = "as a stream (--stream)" if old.stream else "without --stream"
        raise _refuse(out, f"a run played {played}")
    if old.code != new.code:
        changed = [f"{k} {old.code.get(k)} -> {v}" for k, v in new.code.items() if old.code.get(k) != v]
        raise _refuse(out, f"a run made by other code ({', '.join(changed)})")
    if old.episodes == new.episodes:
        return old.episodes
    added = [e for e in new.episodes if e not in set(old.episodes)]
    if extend:
        return old.episodes + added
    missing = len([e for e in old.episodes if e not in set(new.episodes)])
    raise RunDirError(
        f"--out {out} holds a run of {len(old.episodes)} episodes and this selection differs "
        f"({len(added)} new, {missing} not selected): --extend adds the new ones to the run, "
        "--restart discards it, or use another --out"
    )


_EPISODE_ID = re.compile(r"\d+-\d+(?:-s\d+)?")
"""An episode id as run.json lists them; anything else (``../x``) never becomes a path to delete."""


def _episode_logs(events: Path, ids: list[str]) -> list[Path]:
    """The logs of these episodes in an events folder, and their attempts kept in ``failed/``."""
    found: list[Path] = []
    for episode_id in ids:
        if not _EPISODE_ID.fullmatch(episode_id):
            continue
        found.append(events / f"{episode_id}.jsonl")
        if (events / "failed").is_dir():
            found += sorted((events / "failed").glob(f"{glob.escape(episode_id)}.*"))
    return found


def _warmup_episodes(out: Path, run_id: str) -> list[str] | None:
    """The episodes of DIR's warm-up when ``warmup/run.json`` says the run ``run_id`` played it."""
    try:
        data = json.loads((out / WARMUP_DIR / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("run_id") != run_id:
        return None
    episodes = data.get("episodes")
    if not isinstance(episodes, list):
        return None
    return [e for e in episodes if isinstance(e, str)]


def _is_store(path: Path) -> bool:
    """Whether ``path`` is a fastslow SQLite store (or an empty file or database that may become one)."""
    from fastslow.memory.stores import MemoryStoreError
    from fastslow.memory.stores.sqlite import check_store_file

    try:
        check_store_file(path)
    except MemoryStoreError:
        return False
    return True


def run_files(out: Path, record: RunRecord) -> list[Path]:
    """What the run ``record`` describes wrote into DIR, as far as it is there unchanged: what
    ``restart`` deletes.

    The proof of origin is the manifest (``fastslow.manifest``): every file the run's commands wrote
    into DIR (event logs, their attempts in ``events/failed/``, the warm-up's logs, ``metrics.json``,
    ``config.yaml``, the per-run store and the response cache) and every file ``fastslow report`` wrote
    into ``DIR/report``, each still as it was written, plus ``run.json`` itself. A file of the same
    name that a user put there, or changed since, stays. A run of an older fastslow, without a
    manifest, is read by its record: its episodes' and warm-up's logs, ``metrics.json``,
    ``config.yaml``, the response cache when it is one, the per-run store when it is a fastslow store;
    never ``report/``'s files, whose origin no record proves."""
    found = [out / RUN_FILE]
    if Manifest(out).exists():
        # SQLite files are recorded as being written (their bytes change under the run): the content
        # must still be what fastslow writes there.
        wrong = set()
        if not ((out / CACHE_FILE).is_file() and is_cache_file(out / CACHE_FILE)):
            wrong |= {CACHE_FILE}
        if not ((out / STORE_FILE).is_file() and _is_store(out / STORE_FILE)):
            wrong |= {STORE_FILE}
        found += [
            p
            for p in Manifest(out).owned_files()
            if p.parent != out or p.name.removesuffix("-wal").removesuffix("-shm") not in wrong
        ]
    else:
        found += _legacy_run_files(out, record)
    for nested in (out / "report", out / WARMUP_DIR):
        if (nested / LOCK_FILE).is_file():
            found += Manifest(nested).owned_files()
    unique = sorted({p.resolve(): p for p in found}.values())
    return [p for p in unique if p.is_file() or p.is_symlink()]


def _legacy_run_files(out: Path, record: RunRecord) -> list[Path]:
    """``run_files`` of a run written before manifests: named by its record."""
    found = [out / CONFIG_FILE, out / METRICS_FILE]
    found += _episode_logs(out / "events", record.episodes)
    warm = _warmup_episodes(out, record.run_id)
    if warm is not None:
        found += [*_episode_logs(out / WARMUP_DIR / "events", warm), out / WARMUP_DIR / RUN_FILE]
    cache = out / CACHE_FILE
    if cache.is_file() and is_cache_file(cache):
        found += [cache, cache.with_name(f"{CACHE_FILE}-wal"), cache.with_name(f"{CACHE_FILE}-shm")]
    store, own = record.store, out / STORE_FILE
    if (
        store is not None
        and store.kind == "sqlite"
        and store.per_run
        and Path(store.location).resolve() == own.resolve()
        and own.is_file()
        and _is_store(own)
    ):
        found += [own, own.with_name(f"{STORE_FILE}-wal"), own.with_name(f"{STORE_FILE}-shm")]
    return found


def _discard(out: Path, files: list[Path]) -> None:
    """Delete ``files`` (``run_files``), then the folders they leave empty."""
    try:
        for path in files:
            path.unlink(missing_ok=True)
            record_removed(path)
    except OSError as exc:
        raise OutputError(f"--restart cannot remove {path}: {exc.strerror or exc}") from exc
    for folder in ("events/failed", "events", "warmup/events/failed", "warmup/events", WARMUP_DIR, "report"):
        with contextlib.suppress(OSError):  # missing, or holding what is not the run's: it stays
            (out / folder).rmdir()


def write_json(path: Path, payload: Any) -> None:
    """Write JSON atomically (tmp + rename); a full disk is an ``OutputError``, the old file stays."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        # recorded first: a .tmp that a kill -9 leaves behind is this command's, not a user's file
        # that would make the directory's next resume refuse
        record_writing(tmp)
        tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
        record_written(path)
        record_removed(tmp)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _store_records(config: RunConfig) -> int | None:
    if not config.amm.enabled:
        return None
    from fastslow.memory.stores import MemoryStoreError, open_store

    try:
        store = open_store(config.amm)
        try:
            return store.count()
        finally:
            store.close()
    except MemoryStoreError as exc:
        raise UsageError(f"memory store: {exc}") from exc


def memory_ranking(config: RunConfig) -> tuple[str | None, str | None]:
    """(ranking, embedder name) AMM will use, as run.json records them; (None, None) without AMM."""
    if not config.amm.enabled:
        return None, None
    from fastslow.memory.stores.vectors import embedder_for

    embedder = embedder_for(config.amm.retrieval)
    return config.amm.retrieval.ranking, (embedder.name if embedder is not None else None)


@dataclass
class _Plan:
    record: RunRecord
    """What run.json will say, before this start is appended."""
    placed: RunConfig
    """The configuration with its AMM store placed."""
    discard: list[Path]
    """``restart``: the files of the run already in DIR (``run_files``)."""


def _plan(
    out: Path,
    config: RunConfig,
    selection: list[str],
    overrides: list[str] | None,
    warmup: dict[str, Any] | None,
    restart: bool,
    extend: bool,
    stream: bool = False,
) -> _Plan:
    """Every refusal of ``claim_run``, read-only: what to write and what to delete if none applies."""
    new = RunRecord(
        run_id=uuid.uuid4().hex[:12],
        config_name=config.name,
        config_hash=config_hash(config),
        overrides=list(overrides or []),
        warmup=warmup,
        code=code_identity(),
        episodes=selection,
        stream=stream,
    )
    try:
        old = read_run_record(out)
    except RunDirError as exc:
        # Not a run this fastslow can read: it cannot tell what in DIR is whose, so it deletes nothing.
        raise RunDirError(f"--out {out}: {exc}; choose another --out") from None
    if old is None:
        foreign = _foreign_files(out)
        if foreign:
            raise RunDirError(
                f"--out {out} holds {', '.join(foreign)} but no fastslow run record: fastslow writes only "
                "into an empty directory or its own run's; choose another --out"
            )
    record, discard = new, []
    if old is not None and restart:
        discard = run_files(out, old)
    elif old is not None:
        episodes = _check(old, new, config.model_dump(mode="json"), out, extend)
        record = old.model_copy(update={"episodes": episodes, "overrides": new.overrides})
    placed = store_config(config, out)
    record.store = store_info(config, out)
    resumed = old if old is not None and not restart else None
    _check_store(out, record.store, resumed, discard)
    return _Plan(record, placed, discard)


def _check_store(out: Path, store: StoreInfo | None, resumed: RunRecord | None, discard: list[Path]) -> None:
    """A ``UsageError`` when the run's SQLite store is a file it must not write into: someone else's
    database (``amm.path`` included), or a per-run ``memory.sqlite`` holding records no run of DIR
    wrote (adopted, a later restart would delete them)."""
    if store is None or store.kind != "sqlite":
        return
    path = Path(store.location)
    if path.resolve() in {p.resolve() for p in discard}:
        return  # the restarted run's own store, about to go
    records = _store_file_records(path)
    own = resumed is not None and resumed.store is not None and resumed.store.per_run
    if store.per_run and records and not own:
        raise RunDirError(
            f"--out {out} holds {STORE_FILE} with {records} records that no run of it wrote: "
            f"name it with -o amm.path={path} to use it, or choose another --out"
        )


def _store_file_records(path: Path) -> int:
    from fastslow.memory.stores import MemoryStoreError
    from fastslow.memory.stores.sqlite import check_store_file

    try:
        return check_store_file(path)
    except MemoryStoreError as exc:
        raise UsageError(f"memory store: {exc}") from None


def check_store(config: RunConfig) -> None:
    """A one-line ``UsageError`` when a placed config's SQLite store is a file fastslow must not write
    into (``check_store_file``: not SQLite, or someone else's database); reads only."""
    amm = config.amm
    if amm.enabled and amm.store == "sqlite" and amm.path:
        _store_file_records(Path(amm.path))


def check_claim(
    out: Path,
    config: RunConfig,
    selection: list[str],
    *,
    overrides: list[str] | None = None,
    warmup: dict[str, Any] | None = None,
    restart: bool = False,
    extend: bool = False,
    stream: bool = False,
) -> None:
    """Every refusal ``claim_run`` would make, without locking or writing anything: called before DIR
    is created, so a refused command leaves DIR (and a directory of someone else's files) as it was."""
    _plan(out, config, selection, overrides, warmup, restart, extend, stream)


def claim_run(
    out: Path,
    config: RunConfig,
    selection: list[str],
    *,
    overrides: list[str] | None = None,
    warmup: dict[str, Any] | None = None,
    workers: int = 1,
    executor: str = "local",
    restart: bool = False,
    extend: bool = False,
    stream: bool = False,
) -> RunRecord:
    """Check DIR against this run's identity, then write config.yaml and run.json. Call it holding
    ``run_lock``; until the lock is released, ``claimed_run(DIR)`` returns the record (the CLI claims
    before the warm-up, ``evaluate`` then plays under that claim). The record's ``episodes`` is the
    selection to play (the union with ``extend``).

    Refused (``RunDirError``/``UsageError``, nothing written or deleted): another run's DIR unless
    ``restart``; another selection unless ``extend`` or ``restart``; a DIR without a fastslow run record
    that holds what a run writes (``restart`` too: it deletes only a recorded run's files); a store the
    run must not write into (``_check_store``). ``restart`` deletes ``run_files`` of the run in DIR."""
    plan = _plan(out, config, selection, overrides, warmup, restart, extend, stream)
    if plan.discard:
        _discard(out, plan.discard)
    record, placed = plan.record, plan.placed
    try:
        (out / "events").mkdir(parents=True, exist_ok=True)
        # SQLite files change under the run: recorded as being written (before the store is first
        # opened, below), whatever their content. -journal: SQLite's rollback journal (e.g. of a
        # fork's store copy) that a kill mid-write leaves.
        sqlite = [CACHE_FILE] + ([STORE_FILE] if record.store is not None and record.store.per_run else [])
        suffixes = ("", "-wal", "-shm", "-journal")
        record_writing(*(out / f"{name}{suffix}" for name in sqlite for suffix in suffixes))
    except OSError as exc:
        raise OutputError(f"cannot write into --out {out}: {exc.strerror or exc}") from exc
    ranking, embedder = memory_ranking(placed)
    record.starts = [
        *record.starts,
        RunStart(
            started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            command=list(sys.argv),
            pid=os.getpid(),
            host=socket.gethostname(),
            workers=workers,
            executor=executor,
            store_records=_store_records(placed),
            memory_ranking=ranking,
            memory_embedder=embedder,
        ),
    ]
    # run.json first: a process killed before config.yaml is written leaves a run that resumes.
    write_json(out / RUN_FILE, record.model_dump(mode="json"))
    dump = yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
    try:
        (out / CONFIG_FILE).write_text(dump, encoding="utf-8")
        record_written(out / CONFIG_FILE)
    except OSError as exc:
        raise OutputError(f"cannot write into --out {out}: {exc.strerror or exc}") from exc
    _CLAIMED[out.resolve()] = record
    return record


def check_episode_out(out: Path, episode_id: str) -> None:
    """``fastslow run --out DIR`` refuses a DIR its log would overwrite or mix with: an eval run's
    directory (or anything holding ``run.json`` or ``metrics.json``), or one that already holds a log
    of this episode (another ``fastslow run``'s, whatever its config). Reads only."""
    found = [name for name in (RUN_FILE, METRICS_FILE) if (out / name).exists()]
    if found:
        raise RunDirError(
            f"--out {out} is an eval run's directory or holds another program's files "
            f"({' and '.join(found)}): `fastslow run` would mix its log with them; choose another --out"
        )
    log = out / "events" / f"{episode_id}.jsonl"
    if log.exists() or log.is_symlink():
        raise RunDirError(
            f"--out {out} already holds a log of episode {episode_id} ({log}): choose another --out"
        )


def claimed_run(out: Path) -> RunRecord | None:
    """The run this process claimed in DIR, if any."""
    return _CLAIMED.get(out.resolve())


def note_warmup(out: Path, config: RunConfig) -> None:
    """Record in run.json how many records the store holds now that the warm-up is played."""
    record = claimed_run(out)
    if record is None or not record.starts:
        return
    record.starts[-1].store_records_after_warmup = _store_records(config)
    write_json(out / RUN_FILE, record.model_dump(mode="json"))


# -- directories of the other commands --------------------------------------------------------------

CLAIM_FILE = ".fastslow-claim.json"
"""What a directory claimed by ``claim_directory`` is: the command's kind and the key of its work."""


def _relation(out: Path, parent: Path) -> str | None:
    """How ``out`` sits against a run directory it must not write into, or None when apart."""
    mine, theirs = out.resolve(), parent.resolve()
    if mine == theirs:
        return "is"
    if theirs in mine.parents:
        return "is inside"
    if mine in theirs.parents:
        return "holds"
    return None


def refuse_parents(out: Path, parents: tuple[Path, ...]) -> None:
    """A one-line ``RunDirError`` when ``out`` is, lies inside or holds one of ``parents``: the runs a
    command reads (a fork's or an attribution's parent) are never written into."""
    for parent in parents:
        relation = _relation(out, parent)
        if relation is not None:
            raise RunDirError(
                f"--out {out} {relation} the run {parent} that this command reads: its files are not "
                "this command's to write; choose another --out"
            )


def foreign_files(out: Path) -> list[str]:
    """Every file under ``out`` (recursively) that no fastslow command recorded writing, unchanged
    since: each is judged by the manifest of the claimed directory it lies in (a fork's run inside an
    attribution by the fork's own), the directories' bookkeeping files aside."""
    if not out.is_dir():
        return []
    found: list[str] = []
    manifests: dict[Path, tuple[Manifest, dict[str, str | None]]] = {}
    top = Path(os.path.abspath(out))
    for path in sorted(out.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            continue
        if path.name in BOOKKEEPING or path.name == CLAIM_FILE:
            continue
        root = claimed_root(path)
        if root is None or not (root == top or top in root.parents):
            root = top
        if root not in manifests:
            manifest = Manifest(root)
            manifests[root] = (manifest, manifest.entries())
        manifest, entries = manifests[root]
        if not manifest.owns(path, entries):
            found.append(str(path.relative_to(out)))
    return found


def _in_use(out: Path) -> str | None:
    """Who holds ``out``'s lock when another live process does (its lock file's line), else None.
    A probe that writes nothing: a shared lock taken and dropped at once."""
    path = out / LOCK_FILE
    if out.resolve() in _HELD or not path.is_file():
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return fh.read().strip() or "another process"
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    except OSError:
        pass  # unreadable: run_lock, under which the check is made again, says so
    return None


def _read_claim(out: Path) -> dict[str, Any] | None:
    path = out / CLAIM_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunDirError(f"--out {out}: {path} cannot be read ({exc}); choose another --out") from None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or "key" not in data:
        raise RunDirError(f"--out {out}: {path} is not a fastslow claim; choose another --out")
    return data


def check_directory(out: Path, kind: str, key: dict[str, Any], *, parents: tuple[Path, ...] = ()) -> None:
    """Every refusal of ``claim_directory``, reading only (one line each, ``RunDirError``/``UsageError``):
    an ``out`` that is a file; that is, lies inside or holds one of ``parents`` (the runs the command
    reads); that another command's work (``kind``) or the same command with another ``key`` claimed;
    or that holds a file no fastslow command wrote there (a user's, or one changed since)."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    refuse_parents(out, parents)
    owner = _in_use(out)
    if owner is not None:  # said first: its files being written are no user's
        raise RunDirError(f"--out {out} is in use by {owner}: wait for it to finish or choose another --out")
    claim = _read_claim(out)
    if claim is not None and claim["kind"] != kind:
        raise RunDirError(
            f"--out {out} holds a `{claim['kind']}` directory, not `{kind}`: choose another --out"
        )
    stored = json.loads(json.dumps(key))  # as the claim file holds it (tuples are lists there)
    if claim is not None and claim["key"] != stored:
        diff = _first_difference(claim["key"], stored)
        raise RunDirError(
            f"--out {out} holds the {kind} of other settings ({diff}): resuming it would mix the two; "
            "choose another --out"
        )
    foreign = foreign_files(out)
    if foreign:
        more = f" (+{len(foreign) - 3} more)" if len(foreign) > 3 else ""
        raise RunDirError(
            f"--out {out} holds {', '.join(foreign[:3])}{more}, which no fastslow {kind} wrote: fastslow "
            "writes only into an empty directory or its own; choose another --out"
        )


@contextmanager
def claim_directory(
    out: Path, kind: str, key: dict[str, Any], *, parents: tuple[Path, ...] = ()
) -> Iterator[Path]:
    """Claim ``out`` for one command's work (``attribute``, ``data gold``, ...): the one path every
    command that writes a directory takes, as ``claim_run`` is for runs.

    Refusals first, reading only (``check_directory``); then ``out`` is created and locked
    (``run_lock``: a second process is refused while this one lives, and the kernel drops the lock
    when it dies), checked again under the lock, and its ``CLAIM_FILE`` names ``kind`` and ``key``, so
    a later command with another key is refused rather than mixing its work with this one's. Files
    written inside are recorded by ``write_json``, ``JsonlWriter`` and ``fastslow.manifest``'s record
    functions: a rerun with the same key resumes over them; nothing else in ``out`` is ever written
    over or deleted."""
    check_directory(out, kind, key, parents=parents)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out} cannot be created: {exc.strerror or exc}") from exc
    with run_lock(out):
        check_directory(out, kind, key, parents=parents)
        payload = {"format": 1, "kind": kind, "key": json.loads(json.dumps(key))}
        write_json(out / CLAIM_FILE, payload)
        yield out
