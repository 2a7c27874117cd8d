"""Run directories that cannot mix, leak or lie (paper §4's evaluation, made safe to resume).

A run directory says what it is: ``run.json`` (a versioned ``RunRecord``) holds the run's identity -
the resolved configuration's hash, the overrides, the warm-up player, the code (fastslow version and
git commit) - and its episode selection. ``claim_run`` checks that identity before anything is written:

- same identity and selection: resume (finished episodes are skipped);
- a different config, overrides, warm-up or code: refused with one line (exit 2); ``restart`` discards
  the run's own files first;
- a different selection: refused unless ``extend`` (the run's selection becomes the union);
- a directory with event logs but no readable ``run.json``: refused (``restart`` to start over).

A lock file (``.fastslow.lock``, an ``flock`` the kernel drops when its owner dies, however it dies)
keeps a second process out of a directory in use; the lock is re-entrant within one process, so the
warm-up and the evaluation of one ``fastslow eval`` share it.

The AMM store of a run lives inside it (``memory.sqlite``) unless the config names one explicitly;
``run.json`` records where it is and how many records it held when each start of the run began.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
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
from pydantic import BaseModel, ConfigDict, ValidationError

from fastslow.config import RunConfig
from fastslow.errors import OutputError, RunDirError, UsageError
from fastslow.eval.runner import git_commit, versions

RUN_FORMAT = 2
"""Version of run.json; 1 was the unversioned record of fastslow <= 0.1 (no identity)."""
RUN_FILE = "run.json"
LOCK_FILE = ".fastslow.lock"
STORE_FILE = "memory.sqlite"
RUN_FILES = ("events", "warmup", "metrics.json", RUN_FILE, "config.yaml", "report")
"""What ``restart`` removes: the files a run writes, and nothing else a user may keep beside them."""


class StoreInfo(BaseModel):
    """Where a run's AMM memory lives and what it held when the run (re)started."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["sqlite", "postgres"]
    location: str
    """SQLite file, or the PostgreSQL DSN with any password redacted, plus ``#table``."""
    per_run: bool
    """True: the run's own store inside the run directory; False: a store named by the config,
    possibly shared with other runs."""


class RunStart(BaseModel):
    """One start of the run (the first, or a resume)."""

    model_config = ConfigDict(extra="forbid")

    started: str
    command: list[str]
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
    warmup: dict[str, Any] | None = None
    """The warm-up that fills the store: ``{"played_by": name, "config_hash": ...}``; None without."""
    code: dict[str, str | None]
    """fastslow, scienceworld, python, ... versions, the git commit and the hash of fastslow's sources."""
    episodes: list[str]
    """The selection: episode ids (``13-0027``, ``13-0027-s1`` when seeded) in play order."""
    store: StoreInfo | None = None
    starts: list[RunStart] = []


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
    """Where a placed config's store is (None without AMM)."""
    amm = config.amm
    if not amm.enabled:
        return None
    if amm.store == "postgres":
        from fastslow.memory.config import redact_dsn

        dsn = amm.dsn or os.environ.get("FASTSLOW_PG_DSN", "")
        return StoreInfo(kind="postgres", location=f"{redact_dsn(dsn)}#{amm.table}", per_run=False)
    assert amm.path, "store_config places the store first"
    per_run = Path(amm.path).resolve() == (out / STORE_FILE).resolve()
    return StoreInfo(kind="sqlite", location=amm.path, per_run=per_run)


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
    """DIR's run record; None when there is none; ``RunDirError`` when it cannot be read as one."""
    path = out / RUN_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunDirError(
            f"--out {out}: {RUN_FILE} cannot be read ({exc}); --restart discards the run"
        ) from None
    if not isinstance(data, dict) or data.get("format") != RUN_FORMAT:
        raise RunDirError(
            f"--out {out} holds a run of an older fastslow without a run identity; "
            "use another --out, or --restart to discard it"
        )
    try:
        return RunRecord.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise RunDirError(f"--out {out}: {RUN_FILE} is not a run record ({where}: {err['msg']})") from None


def _has_run_files(out: Path) -> bool:
    """Logs or metrics of some run (an empty events/ folder, as ``prepare_out_dir`` makes, is none)."""
    logs = (out / "events").is_dir() and any((out / "events").iterdir())
    return logs or (out / "warmup").exists() or (out / "metrics.json").exists()


def _refuse(out: Path, what: str) -> RunDirError:
    return RunDirError(f"--out {out} holds {what}: use another --out, or --restart to discard it")


def _check(old: RunRecord, new: RunRecord, new_dump: dict[str, Any], out: Path, extend: bool) -> list[str]:
    """The selection to record if ``new`` may continue ``old``; otherwise raise ``RunDirError``."""
    if old.config_hash != new.config_hash:
        detail = ""
        try:
            before = yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))
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


def discard_run(out: Path) -> None:
    """``--restart``: remove the run's own files (and its per-run store), nothing else in DIR."""
    for name in RUN_FILES:
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    for suffix in ("", "-wal", "-shm"):
        # only the per-run store: an explicitly named (shared) store is never touched by a restart
        (out / f"{STORE_FILE}{suffix}").unlink(missing_ok=True)


def write_json(path: Path, payload: Any) -> None:
    """Write JSON atomically (tmp + rename); a full disk is an ``OutputError``, the old file stays."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
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
) -> RunRecord:
    """Check DIR against this run's identity, then write config.yaml and run.json. Call it holding
    ``run_lock``; until the lock is released, ``claimed_run(DIR)`` returns the record (the CLI claims
    before the warm-up, ``evaluate`` then plays under that claim). The record's ``episodes`` is the
    selection to play (the union with ``extend``)."""
    new = RunRecord(
        run_id=uuid.uuid4().hex[:12],
        config_name=config.name,
        config_hash=config_hash(config),
        overrides=list(overrides or []),
        warmup=warmup,
        code=code_identity(),
        episodes=selection,
    )
    dump = config.model_dump(mode="json")
    old = None if restart else read_run_record(out)
    if old is None and not restart and _has_run_files(out):
        raise _refuse(out, "event logs but no run record")
    if restart:
        discard_run(out)
    record = new
    if old is not None:
        episodes = _check(old, new, dump, out, extend)
        record = old.model_copy(update={"episodes": episodes, "overrides": new.overrides})
    placed = store_config(config, out)
    record.store = store_info(placed, out)
    try:
        (out / "events").mkdir(parents=True, exist_ok=True)
        (out / "config.yaml").write_text(yaml.safe_dump(dump, sort_keys=False), encoding="utf-8")
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
    write_json(out / RUN_FILE, record.model_dump(mode="json"))
    _CLAIMED[out.resolve()] = record
    return record


def check_not_eval_dir(out: Path) -> None:
    """``fastslow run --out DIR`` must not write into an eval run's directory."""
    if (out / RUN_FILE).exists() or (out / "metrics.json").exists():
        raise RunDirError(
            f"--out {out} is an eval run's directory: `fastslow run` would overwrite its logs; "
            "choose another --out"
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
