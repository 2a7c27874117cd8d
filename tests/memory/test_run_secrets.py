"""A run on the PostgreSQL store (paper §3.1) writes no password anywhere: not in config.yaml, run.json,
the event headers nor metrics.json, whether the password sits in ``amm.dsn`` (redacted in every
record, yet used by the workers) or comes from the variable ``amm.password_env`` names."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.eval.evaluate import evaluate
from fastslow.events import EpisodeStart, MemoryWrite, read_events
from fastslow.memory.stores.postgres import PostgresStore


def _files_holding(out: Path, secret: str) -> list[str]:
    return [str(p) for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


@pytest.mark.parametrize("where", ["dsn", "password_env"])
def test_no_password_in_any_run_record(
    where: str, pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"pw-{uuid.uuid4().hex}"
    params = conninfo_to_dict(pg_dsn)
    table = f"run_secret_{uuid.uuid4().hex[:8]}"
    overrides = ["env.step_limit=25", "amm.store=postgres", f"amm.table={table}"]
    if where == "dsn":
        # the throwaway server trusts local connections, so any password is accepted: what matters is
        # that the workers were given it (the run works) and no record kept it
        dsn = make_conninfo("", **{**params, "password": secret})
        overrides.append(f"amm.dsn={dsn}")
    else:
        monkeypatch.setenv("FASTSLOW_TEST_RUN_PW", secret)
        overrides += [f"amm.dsn={make_conninfo('', **params)}", "amm.password_env=FASTSLOW_TEST_RUN_PW"]
    config = load_config("swift-amm", overrides)
    out = tmp_path / "run"
    try:
        evaluate(config, [Episode(3, 27), Episode(13, 6)], out, workers=2)
        starts = [
            e for p in (out / "events").glob("*.jsonl") for e in read_events(p) if isinstance(e, EpisodeStart)
        ]
        writes = [
            e for p in (out / "events").glob("*.jsonl") for e in read_events(p) if isinstance(e, MemoryWrite)
        ]
        assert len(starts) == 2 and writes, "the store was not written: the workers could not connect"
        assert _files_holding(out, secret) == []
        if where == "dsn":
            assert all("password=***" in s.config["amm"]["dsn"] for s in starts)
            assert "password=***" in (out / "config.yaml").read_text()
    finally:
        PostgresStore(pg_dsn, table).drop()
