"""A run on the PostgreSQL store (paper §3.1) writes no password anywhere: not in config.yaml, run.json,
the event headers nor metrics.json, whether the password sits in ``amm.dsn`` (redacted in every
record, yet used by the workers) or comes from the variable ``amm.password_env`` names. Given with
``-o`` on the command line, in a YAML config file or in FASTSLOW_PG_DSN, it is also absent from the
console, run.json's overrides and commands, ``fastslow report``'s output and the viewer's answers
(fetched over HTTP): the run still used it (its store was written)."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from fastslow.cli import main
from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.eval.evaluate import evaluate
from fastslow.events import EpisodeStart, MemoryWrite, read_events
from fastslow.memory.stores.postgres import PostgresStore
from fastslow.view.server import serve


def _files_holding(out: Path, secret: str) -> list[str]:
    return [str(p) for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


@pytest.mark.parametrize("where", ["dsn", "password_env"])
def test_no_password_in_any_run_record(
    where: str, pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"pw-{uuid.uuid4().hex}"
    params = conninfo_to_dict(pg_dsn)
    table = f"run_secret_{uuid.uuid4().hex[:8]}"
    overrides = ["env.step_limit=8", "amm.store=postgres", f"amm.table={table}"]  # 8 steps: AMM writes
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


def _url_with_password(pg_dsn: str, secret: str) -> str:
    """The test server's DSN as a URL holding ``secret`` as the password (trust auth accepts any)."""
    p = conninfo_to_dict(pg_dsn)
    user, db = quote(str(p.get("user", "postgres"))), p.get("dbname", "postgres")
    return f"postgresql://{user}:{secret}@{p.get('host', '127.0.0.1')}:{p.get('port', '5432')}/{db}"


EPISODE = ["--set", "dev", "--tasks", "13", "--limit-per-task", "1"]
"""One dev episode of swift-amm, cut at 8 steps: enough for AMM to write to the store."""


def _api_answers(url_host: str, port: int) -> str:
    """Every answer of the viewer's API for its first run, fetched over HTTP, as one text."""
    answers = []

    def get(path: str) -> object:
        conn = http.client.HTTPConnection(url_host, port, timeout=60)
        try:
            conn.request("GET", path)
            answer = conn.getresponse()
            assert answer.status == 200, path
            return json.loads(answer.read())
        finally:
            conn.close()

    answers.append(get("/api/runs"))
    episodes = get("/api/runs/0/episodes")
    answers.append(episodes)
    assert isinstance(episodes, list) and episodes
    answers += [get(f"/api/runs/0/episodes/{e['id']}") for e in episodes]
    return json.dumps(answers)


def _store_was_written(out: Path) -> bool:
    return any(isinstance(e, MemoryWrite) for p in (out / "events").glob("*.jsonl") for e in read_events(p))


def test_password_given_with_o_is_nowhere(pg_dsn: str, tmp_path: Path) -> None:
    """The real command line: `fastslow eval -o amm.dsn=...PW...`, then `fastslow report` and `fastslow
    view`; grep for the password over the run directory, the report, the console and the API."""
    secret = f"PW{uuid.uuid4().hex}"
    table = f"cli_secret_{uuid.uuid4().hex[:8]}"
    out = tmp_path / "run"
    fastslow = [sys.executable, "-m", "fastslow.cli"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("FASTSLOW_PG_DSN", None)
    dsn = _url_with_password(pg_dsn, secret)
    overrides = ["env.step_limit=8", "amm.store=postgres", f"amm.table={table}", f"amm.dsn={dsn}"]
    command = [*fastslow, "eval", "--config", "swift-amm", *EPISODE, "--out", str(out)]
    for o in overrides:
        command += ["-o", o]
    try:
        consoles = []
        for args in (command, [*fastslow, "report", str(out)]):
            done = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env, check=False)
            assert done.returncode == 0, done.stderr[-2000:]
            consoles.append(done.stdout + done.stderr)
        assert _store_was_written(out), "the workers could not use the password-bearing DSN"
        viewer = subprocess.Popen(
            [*fastslow, "view", str(out), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert viewer.stdout is not None
            line = viewer.stdout.readline()
            found = re.search(r"http://([\d.]+):(\d+)/", line)
            assert found, line
            api = _api_answers(found.group(1), int(found.group(2)))
        finally:
            viewer.terminate()
            viewer.wait(timeout=30)
        assert secret not in api and "***" in api
        assert _files_holding(out, secret) == []  # the run directory and its report/ folder
        assert (out / "report" / "report.html").is_file()
        assert all(secret not in text for text in consoles)
        record = json.loads((out / "run.json").read_text())
        assert f"amm.dsn={dsn.replace(secret, '***')}" in record["overrides"]
        recorded = record["starts"][-1]["command"]
        assert recorded[-1] == f"amm.dsn={dsn.replace(secret, '***')}" and "swift-amm" in recorded
    finally:
        PostgresStore(pg_dsn, table).drop()


@pytest.mark.parametrize("where", ["yaml", "environment"])
def test_password_from_a_config_file_or_the_environment_is_nowhere(
    where: str,
    pg_dsn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    secret = f"PW{uuid.uuid4().hex}"
    table = f"cfg_secret_{uuid.uuid4().hex[:8]}"
    dsn = _url_with_password(pg_dsn, secret)
    amm = {"store": "postgres", "table": table}
    if where == "yaml":
        monkeypatch.delenv("FASTSLOW_PG_DSN", raising=False)
        amm["dsn"] = dsn
    else:
        monkeypatch.setenv("FASTSLOW_PG_DSN", dsn)  # amm.dsn empty: the store reads the variable
    config = tmp_path / "secret.yaml"
    config.write_text(yaml.safe_dump({"extends": "swift-amm", "env": {"step_limit": 8}, "amm": amm}))
    out = tmp_path / "run"
    try:
        main(["eval", "--config", str(config), *EPISODE, "--out", str(out)])
        main(["report", str(out)])
        assert _store_was_written(out)
        server = serve([out])
        try:
            api = _api_answers("127.0.0.1", server.port)
        finally:
            server.shutdown()
        assert secret not in api
        assert _files_holding(out, secret) == []
        assert secret not in "".join(capsys.readouterr())
        assert json.loads((out / "run.json").read_text())["store"]["location"].startswith(
            dsn.replace(secret, "***")
        )
    finally:
        PostgresStore(pg_dsn, table).drop()
