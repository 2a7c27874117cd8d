from pathlib import Path

import pytest

from fastslow.config import builtin_config_names, load_config
from fastslow.errors import UsageError


def test_builtin_oracle_loads_with_overrides() -> None:
    cfg = load_config("oracle", ["env.step_limit=42", "env.simplification=teleportAction"])
    assert cfg.name == "oracle" and cfg.agent.kind == "oracle"
    assert cfg.env.step_limit == 42 and cfg.env.simplification == "teleportAction"


def test_every_builtin_config_validates() -> None:
    names = builtin_config_names()
    assert "oracle" in names
    for name in names:
        assert load_config(name).name == name


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("env.step_limt=5", "unknown key 'env.step_limt'"),
        ("env.step_limit=many", "env.step_limit"),
        ("nokey", "key.path=value"),
        ("env.step_limit.x=1", "'step_limit' is not a section"),
    ],
)
def test_bad_overrides_are_usage_errors(override: str, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace(".", r"\.")):
        load_config("oracle", [override])


def test_yaml_file_and_unknown_name(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("env:\n  step_limit: 7\n")
    assert load_config(str(path)).env.step_limit == 7
    assert load_config(str(path)).name == "mine"
    with pytest.raises(UsageError, match="unknown config 'nope'"):
        load_config("nope")
