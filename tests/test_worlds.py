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
from fastslow.env.episodes import Episode, select_episodes
from fastslow.env.tasks import all_tasks, get_task
from fastslow.env.textworldexpress.benchmark import load_benchmark
from fastslow.env.world import get_world
from fastslow.errors import UsageError
from fastslow.eval.records import EpisodeResult
from fastslow.events import EnvStep, EpisodeStart, ReplayEnd, read_events
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
        cli(capsys, "episodes", "--world", "textworldexpress", "--set", "test", "--count")[1].strip() == "800"
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
    with pytest.raises(UsageError, match="unknown game id 8"):
        world.select("test", "8")
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
