"""``fastslow.redact``: the one redaction every record and display of a config, an override or a command
line goes through. Passwords in URLs of any scheme, secret query parameters, libpq ``password=`` pairs,
YAML/JSON pairs and keys that name a secret become ``***``; nothing else changes (``max_tokens`` is a
count, ``password_env`` a variable's name)."""

from __future__ import annotations

import json

import pytest
import yaml

from fastslow.config import RunConfig, load_config
from fastslow.errors import UsageError
from fastslow.redact import (
    SECRETS_CONTEXT_KEY,
    is_secret_key,
    redact_argv,
    redact_data,
    redact_override,
    redact_text,
)

PW = "pw-7c1e9"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (f"postgresql://u:{PW}@127.0.0.1:5432/db", "postgresql://u:***@127.0.0.1:5432/db"),
        (f"https://u:{PW}@llm.example/v1", "https://u:***@llm.example/v1"),
        (f"redis://:{PW}@cache:6379/0", "redis://:***@cache:6379/0"),
        (f"mysql+pymysql://u:{PW}@h/db?charset=utf8", "mysql+pymysql://u:***@h/db?charset=utf8"),
        (
            f"postgresql://h/db?user=u&password={PW}&sslmode=require",
            "postgresql://h/db?user=u&password=***&sslmode=require",
        ),
        (f"postgresql://h/db?sslpassword={PW}", "postgresql://h/db?sslpassword=***"),
        (f"https://h/v1?api_key={PW}&x=1", "https://h/v1?api_key=***&x=1"),
        (f"host=h user=u password={PW} dbname=db", "host=h user=u password=*** dbname=db"),
        (f"host=h password = '{PW} x' port=5", "host=h password = *** port=5"),
        (f"amm.dsn=postgresql://u:{PW}@h/db", "amm.dsn=postgresql://u:***@h/db"),
        (
            f"cannot connect to postgresql://u:{PW}@h/db: refused",
            "cannot connect to postgresql://u:***@h/db: refused",
        ),
        (f'{{"api_key": "{PW}", "n": 1}}', '{"api_key": "***", "n": 1}'),
        (f"{{token: {PW}, n: 1}}", "{token: ***, n: 1}"),
        (f"HF_TOKEN={PW}", "HF_TOKEN=***"),
        # nothing to hide
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        (
            "max_tokens=16 password_env=PG_PW api_key_env=KEY",
            "max_tokens=16 password_env=PG_PW api_key_env=KEY",
        ),
        ("controller.sage.plan_max_tokens: 16", "controller.sage.plan_max_tokens: 16"),
        ("", ""),
    ],
)
def test_redact_text(text: str, redacted: str) -> None:
    assert redact_text(text) == redacted
    assert redact_text(redacted) == redacted  # applying it twice changes nothing


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("amm.password", True),
        ("sslpassword", True),
        ("sage.model.extra_body.api_key", True),
        ("apiKey", True),
        ("client_secret", True),
        ("hf_token", True),
        ("aws_secret_access_key", True),
        ("credentials", True),
        ("amm.password_env", False),
        ("sage.model.api_key_env", False),
        ("max_tokens", False),
        ("prompt_budget_tokens", False),
        ("tokenizer", False),
        ("amm.dsn", False),  # a locator: its password is redacted in the text, the host stays
    ],
)
def test_which_keys_name_a_secret(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_overrides_and_command_lines() -> None:
    assert redact_override(f"amm.password={PW}") == "amm.password=***"
    assert redact_override(f"amm.dsn=postgresql://u:{PW}@h/db") == "amm.dsn=postgresql://u:***@h/db"
    assert redact_override(f"amm.dsn=host=h password={PW}") == "amm.dsn=host=h password=***"
    assert redact_override("env.step_limit=25") == "env.step_limit=25"
    argv = [
        "/venv/bin/fastslow", "eval", "--out", "runs/x",
        "-o", f"amm.dsn=postgresql://u:{PW}@h/db",
        "--override", f"sage.model.extra_body.api_key={PW}",
        f"--override=critic.model.extra_body={{token: {PW}}}",
        f"-osage.model.base_url=https://u:{PW}@h/v1",
        "--pg-dsn", f"host=h password={PW}",
        "--api-key", PW, f"--password={PW}",
        "--password-env", "PG_PW", "-o", "env.step_limit=25",
    ]  # fmt: skip
    shown = redact_argv(argv)
    assert PW not in json.dumps(shown)
    assert len(shown) == len(argv)
    assert shown[5] == "amm.dsn=postgresql://u:***@h/db"
    assert shown[-4:] == ["--password-env", "PG_PW", "-o", "env.step_limit=25"]
    assert shown[:4] == argv[:4]


def test_config_dumps_redact_every_secret_but_the_shipped_one() -> None:
    """Every dump of a run config (config.yaml, event headers, the hash, ``config show``) redacts a
    password given in any field; only the harness's own workers get it (``{"secrets": True}``)."""
    config = load_config(
        "srm",
        [
            "sage.model.kind=openai",
            "sage.model.model=m",
            f"sage.model.base_url=http://u:{PW}@127.0.0.1:1/v1",
            f"sage.model.extra_body={{api_key: {PW}, top_k: 5}}",
            "amm.store=postgres",
            f"amm.dsn=postgresql://u:{PW}@127.0.0.1:1/db",
        ],
    )
    dumps = [
        json.dumps(config.model_dump(mode="json")),
        config.model_dump_json(),
        yaml.safe_dump(config.model_dump(mode="json")),
    ]
    for text in dumps:
        assert PW not in text and "u:***@127.0.0.1" in text
    assert config.model_dump(mode="json")["sage"]["model"]["extra_body"] == {"api_key": "***", "top_k": 5}
    shipped = config.model_dump(mode="json", context={SECRETS_CONTEXT_KEY: True})
    assert shipped["sage"]["model"]["extra_body"]["api_key"] == PW
    assert RunConfig.model_validate(shipped) == config
    # a config without secrets dumps exactly as before: its hash (a run's identity) does not move
    plain = load_config("swift-amm").model_dump(mode="json")
    assert (
        redact_data(plain)
        == plain
        == load_config("swift-amm").model_dump(mode="json", context={"secrets": True})
    )


def test_a_refused_secret_is_not_echoed() -> None:
    with pytest.raises(UsageError) as err:
        load_config("amm", ["amm.store=postgres", f"amm.password_env=password={PW}"])
    assert PW not in str(err.value) and "amm.password_env" in str(err.value)


def test_redact_data_masks_secret_keys_in_any_answer() -> None:
    data = {
        "overrides": [f"amm.dsn=postgresql://u:{PW}@h/db"],
        "nested": [{"token": PW, "password": None, "secret": "", "max_tokens": 7}],
        "text": f"connect to host=h password={PW}",
    }
    out = redact_data(data)
    assert PW not in json.dumps(out)
    assert out["nested"] == [{"token": "***", "password": None, "secret": "", "max_tokens": 7}]
