import re
from pathlib import Path

import pytest

from fastslow.cli import main
from fastslow.config import SCIENCEWORLD_SIMPLIFICATIONS, builtin_config_names, load_config
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
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
    """The paper's four configurations share everything but the module sections (extends: baseline), and
    with SRM the authors' focus gate, which their loop runs only without SRM (Gate-1 holds focus then)."""
    assert _sections("amm", ("amm",)) == _sections("baseline", ("amm",))
    srm, baseline = _sections("srm", ("srm", "critic")), _sections("baseline", ("srm", "critic"))
    assert srm["controller"].pop("focus_gate") is False and baseline["controller"].pop("focus_gate") is True  # type: ignore[attr-defined]
    # ... and the deferral of a focus on an unseen target, their Gate-1's
    assert srm["controller"]["buffer"].pop("defer_unseen_focus") is True  # type: ignore[index]
    assert baseline["controller"]["buffer"].pop("defer_unseen_focus") is False  # type: ignore[index]
    assert srm == baseline
    for name in ("srm", "full", "paper-srm", "paper-full"):
        assert load_config(name).controller.focus_gate is False, name
    for name in ("baseline", "amm", "paper", "paper-amm"):
        assert load_config(name).controller.focus_gate is True, name
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
    assert mixed.agent.kind == "swiftsage" and not mixed.controller.sage_enabled and mixed.env.step_limit == 7
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


SENSITIVITY = [
    "full-critic6",
    "full-no-t1",
    "paper-full-critic6",
    "paper-full-no-t1",
    "paper-amm-weak-memory",
]
ALL_CONFIGS = [*builtin_config_names(), *(f"sensitivity/{name}" for name in SENSITIVITY)]


@pytest.mark.parametrize("name", ALL_CONFIGS)
def test_builtin_configs_satisfy_the_constraints(name: str) -> None:
    """The bounds below were chosen so that every shipped configuration still validates."""
    cfg = load_config(name)
    assert cfg.env.step_limit >= 1 and cfg.env.jvm_timeout_s > 0
    assert {s for s in cfg.env.simplification.split(",") if s} <= {"easy", *SCIENCEWORLD_SIMPLIFICATIONS}


# One out-of-range value per constrained field; the error must name the key that is wrong.
BAD_VALUES = [
    ("env.simplification", "nonsense"),
    ("env.simplification", "easy,teleportAction,bogus"),
    ("env.simplification", "teleportAction, openDoors"),  # ScienceWorld's wrapper rejects spaces too
    ("env.step_limit", "0"),
    ("env.step_limit", "-5"),
    ("env.jvm_timeout_s", "-1"),
    ("env.jvm_timeout_s", "0"),
    ("env.jvm_timeout_s", ".nan"),
    ("swift.top_k", "0"),
    ("swift.min_confidence", "1.5"),
    ("swift.min_confidence", "-0.1"),
    ("swift.num_beams", "0"),
    ("swift.max_new_tokens", "0"),
    ("swift.rerank_pool", "0"),
    ("swift.repeat_penalty", "-1"),
    ("swift.loop_window", "0"),
    ("critic.budget", "-1"),
    ("critic.cooldown", "-1"),
    ("critic.backoff", "-1"),
    ("critic.effect_window", "0"),
    ("critic.max_actions", "0"),
    ("critic.history", "-1"),
    ("controller.escalation.min_actions", "-1"),
    ("controller.escalation.sage_interval", "-1"),
    ("controller.escalation.reward_window", "0"),
    ("controller.escalation.repeat_window", "0"),
    ("controller.escalation.no_action_streak", "-1"),
    ("controller.escalation.failure_streak", "-1"),
    ("env.failure_markers", "['not', '']"),
    ("env.failure_markers", "['  ']"),
    ("controller.escalation.max_consecutive_sage", "-1"),
    ("controller.escalation.sage_cooldown", "-1"),
    ("controller.buffer.size", "0"),
    ("controller.buffer.failure_limit", "-1"),
    ("controller.sage.history_turns", "-1"),
    ("controller.sage.max_look_chars", "2"),
    ("controller.sage.max_failures", "0"),
    ("controller.sage.swift_candidates", "-1"),
    ("controller.sage.plan_max_tokens", "0"),
    ("controller.sage.ground_max_tokens", "0"),
    ("controller.sage.parse_retries", "-1"),
    ("controller.ground_cutoff", "101"),
    ("controller.ground_cutoff", "-1"),
    ("controller.early_stop_min_steps", "-1"),
    ("controller.early_stop_window", "0"),
    ("controller.ambiguous_answer", "first"),
    ("srm.gate.fuzzy_threshold", "101"),
    ("srm.gate.fuzzy_margin", "-1"),
    ("srm.gate.fuzzy_margin", "101"),
    ("srm.gate.focus_limit", "-1"),
    ("srm.stagnation.window", "1"),
    ("srm.stagnation.min_step", "-1"),
    ("srm.stagnation.repeated_observation", "1"),
    ("srm.stagnation.repeated_observation", "6"),  # longer than the 5-step window: could never fire
    ("srm.stagnation.repeated_action", "6"),
    ("srm.stagnation.verb_loop", "6"),
    ("srm.stagnation.invalid_loop", "6"),
    ("srm.stagnation.navigation_steps", "0"),
    ("srm.stagnation.navigation_steps", "6"),
    ("srm.stagnation.navigation_max_states", "0"),
    ("srm.stagnation.repeat_after", "0"),
]


@pytest.mark.parametrize(("key", "value"), BAD_VALUES)
def test_out_of_range_values_are_usage_errors_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(UsageError) as info:
        load_config("swift-srm", [f"{key}={value}"])
    message = str(info.value)
    # a list item is named by its index (failure_markers.1), any other value by its key
    assert re.match(rf"config swift-srm: {re.escape(key)}(\.\d+)?: ", message), message
    assert "\n" not in message


def test_a_window_shorter_than_a_detector_names_the_window() -> None:
    """Shrinking the window below a detector's threshold fails, and says which threshold and why."""
    with pytest.raises(UsageError, match=r"navigation_steps: .*4 exceeds stagnation\.window \(3\)"):
        load_config("swift-srm", ["srm.stagnation.window=3"])
    cfg = load_config("swift-srm", ["srm.stagnation.window=3", "srm.stagnation.navigation_steps=3"])
    assert cfg.srm.stagnation.window == 3


@pytest.mark.parametrize(
    "value",
    ["", "easy", "teleportAction", "openDoors,openContainers", ",".join(SCIENCEWORLD_SIMPLIFICATIONS)],
)
def test_scienceworld_simplifications_are_accepted(value: str) -> None:
    assert load_config("swift-only", [f"env.simplification='{value}'"]).env.simplification == value


def test_simplification_names_are_scienceworlds_own(env: ScienceWorldAdapter) -> None:
    """Our list is ScienceWorld's: the simulator's own answer, asked of the running JVM."""
    possible = str(env._ensure_jvm().server.getPossibleSimplifications()).split(", ")
    assert sorted(possible) == sorted(SCIENCEWORLD_SIMPLIFICATIONS)


def test_simplification_error_lists_the_known_names() -> None:
    with pytest.raises(UsageError) as info:
        load_config("swift-only", ["env.simplification=nonsense"])
    assert "'nonsense'" in str(info.value)
    assert all(name in str(info.value) for name in ("easy", *SCIENCEWORLD_SIMPLIFICATIONS))


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("env.simplification=nonsense", "env.simplification"),
        ("env.jvm_timeout_s=-1", "env.jvm_timeout_s"),
        ("env.step_limit=0", "env.step_limit"),
    ],
)
def test_cli_rejects_bad_env_values_before_writing(
    override: str, key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    argv = ["eval", "--config", "swift-only", "--set", "test", "--tasks", "13", "--limit-per-task", "1"]
    with pytest.raises(SystemExit) as info:
        main([*argv, "-o", override, "--out", str(out)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert key in err and err.startswith("error: ")
    assert not out.exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["swift.num_beams=3"], "num_beams is used only by backend t5"),
        (["swift.max_new_tokens=8"], "max_new_tokens is used only by backend t5"),
        (["amm.dsn=postgresql://u:hunter2@db/amm"], "amm.dsn is used only by store postgres"),
        (["amm.table=other"], "amm.table is used only by store postgres"),
        (["amm.store=postgres", "amm.path=x.sqlite"], "amm.path is used only by store sqlite"),
    ],
)
def test_a_setting_the_chosen_backend_does_not_use_is_refused(overrides: list[str], message: str) -> None:
    with pytest.raises(UsageError) as info:
        load_config("swift-amm", overrides)
    text = str(info.value)
    assert message in text and "\n" not in text
    assert "hunter2" not in text  # a section's input (which may hold a DSN) is not echoed back


def test_the_settings_of_the_chosen_backend_are_accepted() -> None:
    assert load_config("paper").swift.num_beams == 5  # t5: its beam settings are its own
    cfg = load_config("swift-amm", ["amm.store=postgres", "amm.dsn=postgresql://db/amm", "amm.table=t2"])
    assert cfg.amm.table == "t2"
    # a config read back from its own dump stays valid (the workers re-validate what they are sent)
    assert type(cfg).model_validate_json(cfg.model_dump_json(context={"secrets": True})) == cfg


def test_the_paper_sensitivity_configs_change_only_their_setting() -> None:
    full = load_config("paper-full")
    critic6 = load_config("sensitivity/paper-full-critic6")
    assert critic6.critic.budget == 6 and full.critic.budget == 3
    assert critic6.critic.model == full.critic.model and critic6.sage == full.sage and critic6.amm == full.amm
    no_t1 = load_config("sensitivity/paper-full-no-t1")
    assert no_t1.amm.retrieval.t1_inject is False and full.amm.retrieval.t1_inject is True
    assert no_t1.amm.retrieval.t1 is True  # the authors' switch: T1 fires, its retry sees no memories
    assert no_t1.srm == full.srm and no_t1.swift == full.swift
    weak = load_config("sensitivity/paper-amm-weak-memory")
    assert weak.amm == load_config("paper-amm").amm and weak.sage == load_config("paper-amm").sage
    assert (weak.warmup, load_config("paper-amm").warmup, full.warmup, critic6.warmup) == (
        "refused",
        "required",
        "required",
        "required",
    )
    assert load_config("amm").warmup == "any"  # the embedded configs leave the regime to the command line


@pytest.mark.parametrize(
    ("config", "flags", "message"),
    [
        ("paper-full", [], "add --warmup"),
        ("sensitivity/paper-amm-weak-memory", ["--warmup"], "run it without --warmup"),
        ("amm", ["-o", "warmup=required"], "add --warmup"),
    ],
)
def test_the_memory_regime_is_checked_before_writing(
    config: str, flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    argv = ["eval", "--config", config, "--set", "test", "--tasks", "13", "--limit-per-task", "1", *flags]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--out", str(out)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not out.exists()


def _alias_bomb(levels: int = 9) -> str:
    """Billion laughs: each level is 9 aliases of the one before, 9**levels strings once expanded."""
    lines = ['      a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"      a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines)


def test_a_yaml_alias_bomb_is_refused_in_one_line_without_eating_memory(tmp_path: Path) -> None:
    """Under ``sage.model.extra_body`` (a free-form mapping): refused while the YAML is read, in a process
    limited to 1.5 GB of address space and 60 s (dumping the expanded bomb, as ``config show`` and
    every run do, would need hundreds of GB)."""
    import resource
    import subprocess
    import sys

    bomb = tmp_path / "bomb.yaml"
    model = "kind: openai\n    model: m\n    extra_body"  # a setting the openai backend takes
    bomb.write_text(f"extends: swift-only\nsage:\n  model:\n    {model}:\n{_alias_bomb()}\n")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))

    proc = subprocess.run(
        [sys.executable, "-m", "fastslow.cli", "config", "show", "--config", str(bomb)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip() == (
        f"error: config {bomb}: its aliases expand it past 100000 nodes (an alias bomb?); refused"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sage:\n  model:\n    extra_body: &x {a: *x}\n", "an alias refers to a node that contains it"),
        ("env: " + "[" * 5000 + "]" * 5000 + "\n", "is nested too deeply to read"),
        ("env: {step_limit: [\n", "is not valid YAML"),
    ],
)
def test_self_referring_deep_or_broken_yaml_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(UsageError, match=re.escape(message)) as info:
        load_config(str(path))
    assert "\n" not in str(info.value)


def test_an_alias_bomb_in_an_override_and_anchors_that_expand_a_little_load() -> None:
    bomb = "{" + _alias_bomb().replace("\n", ",").replace("      ", "") + "}"
    with pytest.raises(UsageError, match="its aliases expand it past"):
        load_config("swift-only", [f"sage.model.extra_body={bomb}"])
    cfg = load_config("swift-only", ["amm.retrieval.t2_at=[1, 2]", "sage.model.stop=[&s END, *s]"])
    assert cfg.sage.model.stop == ["END", "END"]


def test_a_config_that_is_not_utf8_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("extends: swift-only\ndescription: caf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(SystemExit) as exc:
        main(["config", "show", "--config", str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: config {path} is not UTF-8 text (invalid continuation byte at byte 36)"


@pytest.mark.parametrize(
    "override",
    [
        "env.step_limit=true",
        "swift.top_k=true",
        "sage.model.temperature=false",
        "amm.retrieval.t2_at=[3, true]",
    ],
)
def test_a_boolean_is_not_a_number(override: str) -> None:
    with pytest.raises(UsageError, match=r"a number is meant here, not true/false"):
        load_config("swift-amm", [override])


def test_numbers_still_load_as_numbers() -> None:
    cfg = load_config("swift-amm", ["env.step_limit=3", "swift.top_k=4", "sage.model.temperature=1"])
    assert (cfg.env.step_limit, cfg.swift.top_k, cfg.sage.model.temperature) == (3, 4, 1.0)
    assert isinstance(cfg.sage.model.temperature, float)
