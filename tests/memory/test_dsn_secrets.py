"""AMM's PostgreSQL secrets (paper §3.1 store): passwords come from the environment, dumps redact them.

``amm.password_env`` names the variable holding the password, as ``ModelConfig.api_key_env`` does for
API keys; every dump of the config (config.yaml, run.json, event headers) writes ``***`` for a password
left in the DSN, unless the serialization context says ``{"secrets": True}`` (the harness shipping the
config to its own workers). The table name is SQL-interpolated, so only an identifier is accepted.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from fastslow.config import RunConfig
from fastslow.memory.config import SECRETS_CONTEXT_KEY, AmmConfig, redact_dsn
from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores import MemoryStoreError, open_store
from fastslow.memory.stores.postgres import PostgresStore

SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize(
    ("dsn", "redacted"),
    [
        (f"postgresql://amm:{SECRET}@db.example:5432/amm", "postgresql://amm:***@db.example:5432/amm"),
        (f"postgres://amm:{SECRET}@db/amm?sslmode=require", "postgres://amm:***@db/amm?sslmode=require"),
        ("postgresql://amm:p%40ss@db/amm", "postgresql://amm:***@db/amm"),  # percent-encoded '@'
        ("postgresql://amm:p@ss@db/amm", "postgresql://amm:***@db/amm"),  # a raw '@' leaks nothing either
        (
            f"postgresql://db/amm?user=amm&password={SECRET}&sslmode=require",
            "postgresql://db/amm?user=amm&password=***&sslmode=require",
        ),
        (f"host=db user=amm password={SECRET} dbname=amm", "host=db user=amm password=*** dbname=amm"),
        ("host=db password='se cret' dbname=amm", "host=db password=*** dbname=amm"),
        ("host=db password = 'it\\'s secret' port=5432", "host=db password = *** port=5432"),
        ("postgresql://amm@db/amm", "postgresql://amm@db/amm"),  # nothing to hide
        ("host=db user=amm", "host=db user=amm"),
        ("", ""),
    ],
)
def test_redact_dsn(dsn: str, redacted: str) -> None:
    assert redact_dsn(dsn) == redacted
    assert not any(secret in redacted for secret in (SECRET, "se cret", "p%40ss", "ss@", "it\\'s"))


def test_every_dump_redacts_the_dsn_unless_asked_for_secrets() -> None:
    dsn = f"postgresql://amm:{SECRET}@db.example/amm"
    cfg = AmmConfig(enabled=True, store="postgres", dsn=dsn)
    run = RunConfig(amm=cfg)
    # How config.yaml, run.json and event headers are written: plain dumps of the run config.
    for text in (
        cfg.model_dump_json(),
        run.model_dump_json(),
        json.dumps(cfg.model_dump()),
        json.dumps(run.model_dump(mode="json")),
        repr(cfg.model_dump(context={"secrets": False})),
    ):
        assert SECRET not in text and "postgresql://amm:***@db.example/amm" in text
    assert cfg.dsn == dsn  # the live object keeps it: the store must connect
    # The harness's own workers get the real DSN, and can rebuild the same config from it.
    shipped = run.model_dump(mode="json", context={SECRETS_CONTEXT_KEY: True})
    assert shipped["amm"]["dsn"] == dsn
    assert RunConfig.model_validate(shipped) == run
    assert RunConfig.model_validate_json(run.model_dump_json(context={"secrets": True})).amm.dsn == dsn


@pytest.mark.parametrize(
    "table", ["amm; DROP TABLE users", "Amm", "amm-memories", "1amm", "a" * 58, "amm memories", ""]
)
def test_table_must_be_an_sql_identifier(table: str) -> None:
    with pytest.raises(ValidationError, match="lower-case SQL identifier"):
        AmmConfig(store="postgres", table=table)
    assert AmmConfig(store="postgres", table="amm_memories_2").table == "amm_memories_2"


def test_password_env_is_a_variable_name() -> None:
    with pytest.raises(ValidationError, match="name of an environment variable"):
        AmmConfig(store="postgres", password_env=f"password={SECRET}")
    assert (
        AmmConfig(store="postgres", password_env="FASTSLOW_PG_PASSWORD").password_env
        == "FASTSLOW_PG_PASSWORD"
    )


def test_missing_password_variable_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FASTSLOW_TEST_NO_SUCH_PW", raising=False)
    cfg = AmmConfig(
        store="postgres", dsn="postgresql://amm@127.0.0.1:1/amm", password_env="FASTSLOW_TEST_NO_SUCH_PW"
    )
    with pytest.raises(MemoryStoreError) as err:
        open_store(cfg)  # refused before any connection is tried (port 1 would not answer anyway)
    message = str(err.value)
    assert "\n" not in message and "FASTSLOW_TEST_NO_SUCH_PW" in message and "not set" in message


@pytest.fixture
def pg_role(pg_dsn: str) -> Iterator[tuple[str, str]]:
    """(dsn without password, password) of a fresh login role that can create tables; dropped after."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    role, password = f"amm_pw_{uuid.uuid4().hex[:8]}", f"pw-{uuid.uuid4().hex}"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        try:
            admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("the test server's user may not create roles")
        admin.execute(f"CREATE SCHEMA {role} AUTHORIZATION {role}")  # the role's default search_path
    params = {k: v for k, v in conninfo_to_dict(pg_dsn).items() if k != "password"}
    yield make_conninfo("", **{**params, "user": role}), password
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA {role} CASCADE")
        admin.execute(f"DROP ROLE {role}")


def _record() -> MemoryRecord:
    return MemoryRecord(
        task_id=0,
        task_name="boil",
        task_family="1",
        episode_id="pw-0",
        step=1,
        room="kitchen",
        inventory="empty",
        recent=(),
        action="activate stove",
        observation="The stove is now activated.",
        score_before=0,
        score_after=20,
        tag="success",
        subtag="milestone",
    )


def test_password_env_reaches_the_server(pg_role: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Connect as a password role through ``password_env``; the DSN and every dump hold no password."""
    dsn, password = pg_role
    monkeypatch.setenv("FASTSLOW_TEST_PG_PASSWORD", password)
    cfg = AmmConfig(store="postgres", dsn=dsn, password_env="FASTSLOW_TEST_PG_PASSWORD", table="amm_pw")
    store = open_store(cfg)
    assert isinstance(store, PostgresStore)
    try:
        # libpq used the variable's value (the DSN has none), as this role, and the store works.
        assert store._db.info.password == password and password not in dsn
        assert store._db.execute("SELECT current_user").fetchone() == (dsn.split("user=")[1].split()[0],)
        store.add(_record())
        assert [r.action for r in store.search("activate stove", task="boil")] == ["activate stove"]
    finally:
        store.close()
    assert password not in cfg.model_dump_json()
    # Does the server check passwords? scripts/start-postgres.sh trusts local connections; a CI server
    # may not. Where it checks, a wrong password must be refused.
    monkeypatch.setenv("FASTSLOW_TEST_PG_PASSWORD", "wrong-" + password)
    try:
        wrong = open_store(cfg)
    except MemoryStoreError as exc:
        assert "password authentication failed" in str(exc) and password not in str(exc)
    else:
        assert isinstance(wrong, PostgresStore)
        assert wrong._db.info.password == "wrong-" + password  # trust auth: passed, just not checked
        wrong.close()
