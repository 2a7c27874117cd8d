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


def _sections(name: str, drop: tuple[str, ...]) -> dict[str, object]:
    dump = load_config(name).model_dump()
    return {k: v for k, v in dump.items() if k not in ("name", "description", *drop)}


def test_module_configs_differ_from_their_base_only_in_their_module() -> None:
    """The paper's four configurations share everything but the module sections (extends: baseline)."""
    assert _sections("amm", ("amm",)) == _sections("baseline", ("amm",))
    assert _sections("srm", ("srm", "critic")) == _sections("baseline", ("srm", "critic"))
    full = load_config("full")
    assert full.amm == load_config("amm").amm and full.srm == load_config("srm").srm
    assert full.critic == load_config("srm").critic and full.name == "full"
    assert load_config("sensitivity/full-critic6").critic.budget == 6
    assert _sections("sensitivity/full-critic6", ("critic",)) == _sections("full", ("critic",))
    fast = load_config("swift-amm-srm")
    assert fast.amm == load_config("swift-amm").amm and fast.critic.kind == "rules"
    assert fast.env == load_config("swift-only").env and fast.controller.sage_enabled is False


def test_extends_merges_sections_and_reports_loops(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("description: base\nenv:\n  step_limit: 7\n  simplification: ''\n")
    (tmp_path / "child.yaml").write_text("extends: base.yaml\nenv:\n  step_limit: 9\n")
    child = load_config(str(tmp_path / "child.yaml"))
    # the child's key wins, the parent's other keys stay, name/description are not inherited
    assert (child.env.step_limit, child.env.simplification) == (9, "")
    assert (child.name, child.description) == ("child", "")
    (tmp_path / "builtin.yaml").write_text("extends: [swift-only, base.yaml]\n")
    mixed = load_config(str(tmp_path / "builtin.yaml"))
    assert mixed.agent.kind == "swift" and mixed.env.step_limit == 7
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(UsageError, match="'extends' loops"):
        load_config(str(tmp_path / "a.yaml"))
    (tmp_path / "bad.yaml").write_text("extends: {x: 1}\n")
    with pytest.raises(UsageError, match="'extends' takes"):
        load_config(str(tmp_path / "bad.yaml"))
    (tmp_path / "full").mkdir()  # a run folder named like a built-in does not shadow it
    (tmp_path / "uses-full.yaml").write_text("extends: full\n")
    assert load_config(str(tmp_path / "uses-full.yaml")).amm.enabled
    (tmp_path / "missing.yaml").write_text("extends: nosuch\n")
    with pytest.raises(UsageError, match="unknown config 'nosuch'"):
        load_config(str(tmp_path / "missing.yaml"))
