"""The world seam (``fastslow.env.world``): an oracle eval on TextWorldExpress through the command line
reaches success on every episode, and ``report``, the viewer and ``fork`` work on its run unchanged;
``episodes --world`` counts from the world; ScienceWorld-only settings and commands are refused in
one line for another world; ScienceWorld's world is today's functions and old logs read as
ScienceWorld's. Real TWX JVMs, no mocks; one module-scoped run (six episodes of three games) serves
every test that needs one."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from fastslow.cli import main
from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.env.scienceworld.tasks import all_tasks, get_task
from fastslow.env.textworldexpress.benchmark import load_benchmark
from fastslow.env.world import get_world
from fastslow.errors import UsageError
from fastslow.eval.records import EpisodeResult
from fastslow.eval.rundir import CLAIM_FILE
from fastslow.events import EnvStep, EpisodeStart, ReplayEnd, read_events
from fastslow.swift import check_swift
from fastslow.swift.data import MANIFEST, read_episodes
from fastslow.swift.imitation import SwiftWeights
from fastslow.view.server import serve

TWX = ["-o", "env.world=textworldexpress"]
#: cookingworld (id 0, a medium game), twc by name, arithmetic (id 4): names and ids mix in --tasks.
GAMES = {"0": "cookingworld", "1": "twc", "4": "arithmetic"}


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``fastslow ARGS`` in this process: (exit code, stdout, stderr)."""
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("twx") / "oracle"
    args = [
        "eval",
        "--config",
        "oracle",
        *TWX,
        "--set",
        "test",
        "--tasks",
        "0,twc,4",
        "--limit-per-task",
        "2",
    ]
    main([*args, "--out", str(out)])
    return out


def test_an_oracle_eval_on_twx_succeeds_on_every_episode(run: Path) -> None:
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["episodes"] == 6 and metrics["success_rate"] == 1.0 and metrics["errors"] == 0
    assert {k: v["name"] for k, v in metrics["per_task"].items()} == GAMES
    assert metrics["per_task"]["0"]["group"] == "medium" and metrics["per_task"]["4"]["group"] == "short"
    assert {e["world"] for e in metrics["episode_results"]} == {"textworldexpress"}
    logs = sorted(p.name for p in (run / "events").glob("*.jsonl"))
    assert logs == [f"{g:02d}-{s}.jsonl" for g in (0, 1, 4) for s in (20000, 20001)]
    header = read_events(run / "events" / "01-20001.jsonl")[0]
    assert isinstance(header, EpisodeStart)
    assert (header.world, header.task_name, header.split) == ("textworldexpress", "twc", "test")
    assert "textworld-express" in header.versions and "scienceworld" not in header.versions
    assert header.jvm is not None and header.jvm.episodes == ["00-20000", "00-20001", "01-20000"]
    # every game's gold path fits its own step limit, not the oracle config's 1000
    assert all(
        e["steps"] <= load_benchmark().games[e["task_id"]].step_limit for e in metrics["episode_results"]
    )


def test_report_tables_the_games(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "report", str(run), "--out", str(tmp_path / "report"))
    assert code == 0, err
    rows = (tmp_path / "report" / "per_task.csv").read_text().splitlines()
    assert [r.split(",")[:3] for r in rows[1:]] == [
        ["0", "cookingworld", "medium"],
        ["1", "twc", "short"],
        ["4", "arithmetic", "short"],
    ]
    assert "twc" in (tmp_path / "report" / "report.md").read_text()


def _get(port: int, path: str) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
        answer = conn.getresponse()
        assert answer.status == 200, path
        return json.loads(answer.read())
    finally:
        conn.close()


def test_the_viewer_lists_the_episodes_with_their_games(run: Path) -> None:
    server = serve([run], 0)
    try:
        episodes = _get(server.port, "/api/runs/0/episodes")
        listed = {(e["id"], e["task_name"], e["group"], e["outcome"]) for e in episodes}
        assert listed == {
            (f"{g}-{s}", GAMES[str(int(g))], "medium" if g == "00" else "short", "success")
            for g in ("00", "01", "04")
            for s in (20000, 20001)
        }
        tasks = _get(server.port, "/api/runs")[0]["tasks"]
        assert [(t["task_id"], t["name"]) for t in tasks] == [
            (0, "cookingworld"),
            (1, "twc"),
            (4, "arithmetic"),
        ]
        episode = _get(server.port, "/api/runs/0/episodes/04-20000")
        assert len(episode["steps"]) == 5
    finally:
        server.shutdown()


def test_a_fork_with_the_parents_config_repeats_it(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fork"
    code, stdout, err = cli(capsys, "fork", str(run), "01-20001", "--at", "3", "--out", str(out))
    assert code == 0, err
    scores = json.loads(stdout.strip().splitlines()[-1])
    assert scores["fork"] == scores["parent"] and scores["fork"]["end"] == "success"

    def steps(log: Path) -> list[tuple[int, str, str, int]]:
        return [
            (e.step, e.action, e.observation, e.score) for e in read_events(log) if isinstance(e, EnvStep)
        ]

    parent, fork = run / "events" / "01-20001.jsonl", out / "events" / "01-20001.jsonl"
    assert steps(fork) == steps(parent)
    events = read_events(fork)
    header = events[0]
    assert isinstance(header, EpisodeStart) and header.world == "textworldexpress"
    assert header.fork is not None and header.fork.at == 3
    assert [e.agreed for e in events if isinstance(e, ReplayEnd)] == [2]
    # another world's config cannot fork it: the logged actions name another world's episode
    code, _, err = cli(
        capsys, "fork", str(run), "01-20001", "--at", "3", "-c", "oracle", "--out", str(tmp_path / "f2")
    )
    assert (
        code == 2 and "is not the parent's (textworldexpress)" in err and len(err.strip().splitlines()) == 1
    )


def test_episodes_answers_from_the_world(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        cli(capsys, "episodes", "--world", "textworldexpress", "--set", "test", "--count")[1].strip() == "700"
    )
    assert cli(capsys, "episodes", "--set", "test", "--count")[1].strip() == "271"  # ScienceWorld's
    _, out, _ = cli(
        capsys, "episodes", "--world", "textworldexpress", "--set", "dev", "--tasks", "coin,0-1,2"
    )
    firsts = list(dict.fromkeys(line.split()[0] for line in out.splitlines()))
    assert firsts == ["2", "0", "1"] and len(out.splitlines()) == 60  # in the order given, repeats once
    code, _, err = cli(capsys, "episodes", "--world", "nosuch", "--count")
    assert code == 2 and "unknown world 'nosuch'" in err


def test_bench_env_on_twx_prints_its_ratio_and_a_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "bench", "env", "--world", "textworldexpress", "--steps", "40")
    assert code == 0, err
    lines = out.strip().splitlines()
    head = json.loads(lines[-1])
    assert head["steps"] == 40 and head["identical"] and head["world"] == "textworldexpress"
    said = " ".join(lines[:-1])  # the console wraps its line
    assert "raw" in said and "ratio" in said and "target >= 0.8" in said


def test_bench_env_and_data_tasks_refuse_what_their_world_does_not_take(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each world runs its own ``bench env`` (``World.bench_env``) and refuses the other's option, in one
    line, before a JVM starts; ``data tasks`` rebuilds ScienceWorld's task table only; the memory
    benchmark's sample text is ScienceWorld's (its verbs are verbs its semantics reads), none for TWX."""
    table = tmp_path / "tasks.json"
    for args, message in (
        (["bench", "env", "--steps", "5"], "--steps: bench env on ScienceWorld replays whole gold paths"),
        (["bench", "env", "--world", "textworldexpress", "--tasks", "1"], "--tasks: bench env on TextWorld"),
        (["bench", "env", "--world", "textworldexpress", "--steps", "0"], "--steps must be >= 1, got 0"),
        (["data", "tasks", "--world", "textworldexpress", "--out", str(table)], "rebuilds ScienceWorld's"),
    ):
        code, _, err = cli(capsys, *args)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not table.exists()
    assert get_world("textworldexpress").sample_text is None
    sw = get_world("scienceworld")
    text = sw.sample_text
    assert text is not None and all(sw.semantics.verb_of(f"{verb} cup") == verb for verb in text.verbs)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["eval", "-c", "oracle", *TWX, "-o", "env.valid_filter=authors", "--out", "{tmp}/o"],
            "env.valid_filter 'authors' is a ScienceWorld setting; env.world textworldexpress",
        ),
        (
            ["eval", "-c", "oracle", *TWX, "-o", "env.simplification=openDoors", "--out", "{tmp}/o"],
            "env.simplification 'openDoors' is a ScienceWorld setting",
        ),
        (
            ["data", "dagger", "--gold", "{tmp}", "--out", "{tmp}/o", *TWX],
            "data dagger exists for ScienceWorld only",
        ),
        (["bench", "step", *TWX], "bench step exists for ScienceWorld only"),
        (
            ["eval", "-c", "oracle", *TWX, "--tasks", "chess", "--out", "{tmp}/o"],
            "unknown TextWorldExpress game",
        ),
        (["eval", "-c", "oracle", *TWX, "--set", "all", "--out", "{tmp}/o"], "unknown episode set 'all'"),
    ],
)
def test_scienceworld_only_settings_are_refused_in_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_the_twx_world_selects_and_limits() -> None:
    world = get_world("textworldexpress")
    assert [t.name for t in world.tasks()] == [g.name for g in load_benchmark().games]
    assert world.task("coin").task_id == 2 and world.family(2) == "coin"
    assert world.step_limit(0, 1000) == 100 and world.step_limit(0, 10) == 10
    assert world.select("test", "twc", "20003,20001-20002", 2) == [Episode(1, 20001), Episode(1, 20002)]
    assert world.task(0).split_of(10500) == "dev"
    world.task(0).check_variation(999)
    with pytest.raises(UsageError, match="in no TextWorldExpress fold"):
        world.task(0).check_variation(5000)
    with pytest.raises(UsageError, match="selection is empty"):
        world.select("test", "0", "30")
    with pytest.raises(UsageError, match="unknown game id 7"):
        world.select("test", "7")
    twx = load_config("oracle", ["env.world=textworldexpress", "env.jvm_per_episode=true"])
    assert twx.env.jvm_per_episode  # a fresh JVM per episode means the same in every world


def test_scienceworld_is_todays_functions_and_old_logs_are_its() -> None:
    world = get_world("scienceworld")
    assert world.tasks() == all_tasks() and world.task("boil") == get_task("boil")
    assert world.select("test") == select_episodes("test") and world.step_limit(3, 300) == 300
    assert world.family(get_task("1-1").task_id) == "1"
    header = EpisodeStart(
        episode_id="13-0000",
        task_id=13,
        task_name="x",
        variation=0,
        split="test",
        config_name="c",
        config={},
        versions={},
    )
    old = {k: v for k, v in header.model_dump(mode="json").items() if k != "world"}
    assert EpisodeStart.model_validate(old).world == "scienceworld"
    result = EpisodeResult.model_validate(
        {"episode_id": "13-0000", "task_id": 13, "variation": 0, "end": "success", "final_score": 100}
        | {"steps": 3, "wall_s": 1.0, "error": None}
    )
    assert "world" not in result.model_dump(mode="json")  # a ScienceWorld record is as it was
    twx = result.model_copy(update={"world": "textworldexpress"})
    assert EpisodeResult.model_validate(twx.model_dump(mode="json")).world == "textworldexpress"


# -- TextWorldExpress's own Swift: its training data, its weights, its configurations ----------------------

TWX_CONFIGS = ("twx-swift-only", "twx-swift-amm", "twx-swift-srm", "twx-swift-amm-srm")


def test_data_gold_on_twx_replays_the_cached_train_gold_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gold"
    args = ["data", "gold", "--world", "textworldexpress", "--tasks", "simonsays,4", "--per-task", "2"]
    args += ["--workers", "1", "--out", str(out)]
    code, stdout, err = cli(capsys, *args)
    assert code == 0, err
    bench = load_benchmark()
    lengths = sum(len(bench.gold_path(g, s) or ()) for g in (4, 6) for s in (0, 1))
    assert json.loads(stdout.strip().splitlines()[-1]) == {"episodes": 4, "examples": lengths, "skipped": 0}
    manifest = json.loads((out / MANIFEST).read_text())
    assert (manifest["world"], manifest["split"], manifest["per_task"]) == ("textworldexpress", "train", 2)
    assert manifest["episode_ids"] == ["04-0000", "04-0001", "06-0000", "06-0001"]
    assert manifest["gold_cache"]["file"] == "gold-train.json" and manifest["package"] == bench.package
    for rows in read_episodes(out):
        game, seed = rows[0]["task_id"], rows[0]["variation"]
        assert [r["gold_action"] for r in rows] == list(bench.gold_path(game, seed) or ())
        assert all(r["label"] == r["gold_action"] for r in rows)  # valid actions, spelt as TWX lists them
        assert rows[0]["task_name"] == bench.games[game].name and rows[0]["history"] == []
        assert [r["step"] for r in rows] == list(range(len(rows)))
    claim = json.loads((out / CLAIM_FILE).read_text())
    assert claim["key"] == {"world": "textworldexpress", "split": "train", "per_task": 2, "tasks": [4, 6]}
    code, stdout, err = cli(capsys, *args)  # the same settings resume: nothing left to replay
    assert code == 0 and json.loads(stdout.strip().splitlines()[-1])["skipped"] == 4, err
    with pytest.raises(UsageError, match="not a train seed"):
        get_world("textworldexpress").training_gold.path(0, 10000)  # type: ignore[attr-defined]
    code, _, err = cli(capsys, "data", "gold", "--world", "nosuch", "--out", str(tmp_path / "o"))
    assert code == 2 and "unknown world 'nosuch'" in err and not (tmp_path / "o").exists()


def test_the_packaged_twx_swift_was_trained_on_train_seeds_and_plays_a_dev_episode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    weights = SwiftWeights.load(load_config("twx-swift-only").swift.weights_file())
    train = set(load_benchmark().set_seeds("train"))
    episodes = [str(e).split("-") for e in weights.meta["episodes"]]  # type: ignore[attr-defined]
    assert len(episodes) == 1400 and all(int(seed) in train for _, seed in episodes)
    provenance = weights.meta["provenance"]
    assert isinstance(provenance, dict) and provenance["data"]["examples"] == weights.meta["rows"]
    assert provenance["command"][:3] == ["fastslow", "train", "swift"]
    out = tmp_path / "swift"
    code, stdout, err = cli(
        capsys,
        *["eval", "--config", "twx-swift-only", "--set", "dev", "--tasks", "coin"],
        *["--variations", "10001", "--workers", "1", "--out", str(out)],
    )
    assert code == 0, err
    log = read_events(out / "events" / "02-10001.jsonl")
    header = log[0]
    assert isinstance(header, EpisodeStart) and header.world == "textworldexpress"
    assert header.config["swift"]["model_path"] == "packaged:twx-imitation.npz"
    steps = [e for e in log if isinstance(e, EnvStep)]
    assert steps and {e.source for e in steps} == {"swift"}
    # a coin episode the TextWorldExpress Swift wins and ScienceWorld's Swift does not (docs/worlds.md: dev
    # coin 75.00 against 35.00)
    assert json.loads(stdout.strip().splitlines()[-1])["success_rate"] == 1.0


def test_the_twx_fast_pathway_configs_are_the_scienceworld_ones_on_twx() -> None:
    twx = [
        "env.world=textworldexpress",
        "swift.model_path=packaged:twx-imitation.npz",
        "swift.repeat_penalty=0",
    ]
    for name in TWX_CONFIGS:
        config = load_config(name)
        path = config.swift.weights_file()
        assert path is not None and path.is_file() and path.name == "twx-imitation.npz"
        check_swift(config.swift)
        ours = config.model_dump(exclude={"name", "description"})
        # AMM's action prior (issue 51) is fitted on TextWorldExpress's dev streams: on there only
        prior = ["amm.retrieval.prior=true"] if config.amm.enabled else []
        sw = load_config(name.removeprefix("twx-"), [*twx, *prior])
        assert ours == sw.model_dump(exclude={"name", "description"})
    with pytest.raises(UsageError, match="shipped in fastslow"):
        load_config("swift-only", ["swift.model_path=packaged:../imitation.npz"])
    with pytest.raises(UsageError, match="shipped in fastslow"):
        load_config("swift-only", ["swift.backend=t5", "swift.model_path=packaged:twx-imitation.npz"])
    with pytest.raises(UsageError, match=r"Swift model not found: packaged:nosuch\.npz"):
        check_swift(load_config("swift-only", ["swift.model_path=packaged:nosuch.npz"]).swift)


def test_attribute_forks_a_twx_run_and_every_control_repeats_its_parent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``attribute`` on a TextWorldExpress run, unchanged: the rules Critic's answers in a dev
    cookingworld episode of twx-swift-srm are forked with the Critic on and off; TWX replays exactly
    (no caveat), so every control repeats its parent and none is re-sampled."""
    parent = tmp_path / "srm"
    args = ["eval", "--config", "twx-swift-srm", "--set", "dev", "--tasks", "0", "--variations", "10001"]
    code, _, err = cli(capsys, *args, "--out", str(parent))
    assert code == 0, err
    out = tmp_path / "attr"
    code, _, err = cli(
        capsys, "attribute", str(parent), "--mechanism", "critic", "--limit", "2", "--out", str(out)
    )
    assert code == 0, err
    assert "note:" not in err
    payload = json.loads((out / "attribution.json").read_text())
    assert payload["replay_caveat"] is None and payload["replaced"] == []
    assert payload["sampled"] == payload["tried"] == payload["replayed"] == payload["exact"] == 2
    header = read_events(next((out / "forks").glob("*/control/events/*.jsonl")))[0]
    assert isinstance(header, EpisodeStart) and header.world == "textworldexpress"
