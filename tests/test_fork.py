"""Counterfactual forks (eval/fork.py, eval/replay.py): a finished fast-pathway run on real ScienceWorld,
forked halfway through each episode; the same configuration repeats the parent, an AMM fork sees no
record the parent wrote after the fork point, and a replay that answers differently is reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from urllib.request import urlopen

import pytest

from fastslow.cli import main
from fastslow.config import load_config
from fastslow.controller.sage import SageOff
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.errors import UsageError
from fastslow.eval.attribute import Point, attribute, mechanism_points
from fastslow.eval.evaluate import evaluate
from fastslow.eval.fork import fork_episode, read_parent
from fastslow.eval.report import write_report
from fastslow.events import (
    BufferPush,
    EndState,
    EnvStep,
    EpisodeEnd,
    EpisodeStart,
    GateDecision,
    MemoryInjection,
    ReplayEnd,
    SageCall,
    read_events,
)
from fastslow.memory.stores.sqlite import SqliteStore
from fastslow.vocab import Mechanism

#: five tasks, short dev episodes, one worker: every episode but the first ran on a JVM with a history.
TASKS = "4,7,13,17,25"


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fork") / "parent"
    # 20 steps: the packaged Swift of 2026-12-05 (fixed labels) makes its second Gate-1 drop at step 18
    # with a loop window of 10 (swift-only's default is 20 since docs/swift.md 2i: one drop in 20 steps)
    config = load_config("swift-amm-srm", ["env.step_limit=20", "swift.loop_window=10"])
    metrics = evaluate(config, select_episodes("dev", tasks=TASKS, limit_per_task=1), out)
    assert metrics["episodes"] == 5 and metrics["errors"] == 0
    return out


@pytest.fixture(scope="module")
def forks(parent: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, Path]]:
    """Each episode forked at its middle step under the parent's own configuration."""
    root = tmp_path_factory.mktemp("forks")
    out: dict[str, tuple[int, Path]] = {}
    for log in sorted((parent / "events").glob("*.jsonl")):
        episode = read_parent(parent, log.stem)
        at = (len(episode.steps) + 1) // 2
        fork_episode(episode, at, episode.config, root / log.stem)
        out[log.stem] = (at, root / log.stem)
    return out


def steps(path: Path) -> list[tuple[int, str, int, str]]:
    return [(e.step, e.action, e.score, e.observation) for e in read_events(path) if isinstance(e, EnvStep)]


def test_a_fork_under_the_parent_configuration_repeats_the_parent(
    parent: Path, forks: dict[str, tuple[int, Path]]
) -> None:
    assert len({episode[:2] for episode in forks}) == 5
    histories = 0
    for episode, (at, out) in forks.items():
        theirs = parent / "events" / f"{episode}.jsonl"
        mine = out / "events" / f"{episode}.jsonl"
        assert steps(mine) == steps(theirs), episode  # the replayed prefix and the fork's own steps
        events = read_events(mine)
        start, end = events[0], events[-1]
        assert isinstance(start, EpisodeStart) and start.fork is not None
        assert start.fork.at == at and start.fork.run_dir == str(parent)
        assert start.fork.config_name == "swift-amm-srm"
        (replayed,) = [e for e in events if isinstance(e, ReplayEnd)]
        assert replayed.step == at - 1 and replayed.agreed == at - 1  # the agent chose them itself
        assert "observation" in replayed.checked and "n_valid" in replayed.checked
        histories += replayed.history_steps > 0
        # the replay_end sits after the last replayed step, before the fork's own
        position = events.index(replayed)
        before = [e.step for e in events[:position] if isinstance(e, EnvStep)]
        assert before == list(range(1, at))
        parent_end = read_events(theirs)[-1]
        assert isinstance(end, EpisodeEnd) and isinstance(parent_end, EpisodeEnd)
        assert (end.final_score, end.end) == (parent_end.final_score, parent_end.end)
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["episodes"] == 1
    # The parent's JVM played four of them after others; on constant hash codes that history does not
    # matter, so the forks replay none of it and still repeat the parent exactly.
    assert histories == 0


def test_a_fork_sees_no_record_the_parent_wrote_after_its_step(
    parent: Path, forks: dict[str, tuple[int, Path]]
) -> None:
    run_id = json.loads((parent / "run.json").read_text())["run_id"]
    parent_store = SqliteStore(str(parent / "memory.sqlite"))
    try:
        written = list(parent_store.iter_all())
    finally:
        parent_store.close()
    later_somewhere = 0
    for episode, (at, out) in forks.items():
        cutoff = steps_t(parent / "events" / f"{episode}.jsonl", at)
        later_somewhere += sum(r.created > cutoff for r in written)
        store = SqliteStore(str(out / "memory.sqlite"))
        try:
            seen = list(store.iter_all())
        finally:
            store.close()
        fork_run = json.loads((out / "run.json").read_text())["run_id"]
        for record in seen:
            assert record.episode_id != f"{run_id}/{episode}"  # the parent's own: rewritten by the fork
            if not record.episode_id.startswith(f"{fork_run}/"):
                assert record.created <= cutoff, (episode, record.episode_id, record.step)
    assert later_somewhere > 0  # the parent's store did hold later records: the check is not vacuous


def steps_t(log: Path, at: int) -> float:
    """When the parent finished step at-1 (its header's time for at = 1)."""
    events = read_events(log)
    done = [e.t for e in events if isinstance(e, EnvStep) and e.step == at - 1]
    return done[0] if done else events[0].t


def test_a_replay_that_answers_differently_ends_the_fork_with_one_line(
    parent: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "edited"
    shutil.copytree(parent, run, ignore=shutil.ignore_patterns("memory.sqlite-*"))
    episode = "13-" + next(p.stem[3:] for p in (run / "events").glob("13-*.jsonl"))
    log = run / "events" / f"{episode}.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    second = next(r for r in rows if r["event"] == "env_step" and r["step"] == 2)
    second["observation"] += " (edited)"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "fork"
    with pytest.raises(SystemExit) as exc:
        main(["fork", str(run), episode, "--at", "4", "--out", str(out)])
    assert exc.value.code == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "replay diverged at step 2: observation" in err
    events = read_events(out / "events" / f"{episode}.jsonl")
    end = events[-1]
    assert isinstance(end, EpisodeEnd) and end.end is EndState.ERROR and end.steps == 2
    assert not [e for e in events if isinstance(e, ReplayEnd)]


def test_a_fork_under_another_configuration_plays_on_and_reads_like_a_run(
    parent: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fork"
    main(
        [
            "fork",
            str(parent),
            "13-" + first_13(parent),
            "--at",
            "3",
            "--config",
            "swift-only",
            "--out",
            str(out),
        ]
    )
    summary: dict[str, Any] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(summary) == {"parent", "fork", "at", "store"} and summary["store"] is None  # no AMM
    log = out / "events" / f"13-{first_13(parent)}.jsonl"
    events = read_events(log)
    assert isinstance(events[0], EpisodeStart) and events[0].config_name == "swift-only"
    assert steps(log)[:2] == steps(parent / "events" / log.name)[:2]
    html = write_report([out], tmp_path / "report")
    assert html.is_file()


def test_a_parent_from_before_hash_codes_forks_on_the_jvms_own(parent: Path, tmp_path: Path) -> None:
    """A header without ``env.hash_codes`` was played on the JVM's own hash codes: the fork reads it so
    (and would rebuild the JVM's history), and a fork asking for other hash codes is refused before
    anything is written."""
    old = tmp_path / "old"
    shutil.copytree(parent / "events", old / "events")
    shutil.copy(parent / "run.json", old / "run.json")
    log = sorted((old / "events").glob("*.jsonl"))[1]  # its JVM played another episode first
    header, *rest = log.read_text().splitlines()
    start = json.loads(header)
    del start["config"]["env"]["hash_codes"]
    log.write_text("\n".join([json.dumps(start), *rest]) + "\n")
    episode = read_parent(old, log.stem)
    assert episode.config.env.hash_codes == "default" and episode.start.jvm is not None
    assert episode.start.jvm.episodes
    assert read_parent(parent, log.stem).config.env.hash_codes == "constant"
    with pytest.raises(UsageError, match=r"env\.hash_codes 'constant' is not the parent's \('default'\)"):
        fork_episode(episode, 2, load_config("swift-amm-srm"), tmp_path / "a")
    with pytest.raises(UsageError, match="hash_codes"):
        fork_episode(read_parent(parent, log.stem), 2, episode.config, tmp_path / "a")
    assert not (tmp_path / "a").exists()


def first_13(parent: Path) -> str:
    return next(p.stem[3:] for p in (parent / "events").glob("13-*.jsonl"))


def test_bad_input_is_one_line_and_writes_nothing(parent: Path, tmp_path: Path) -> None:
    episode = read_parent(parent, "13-" + first_13(parent))
    for at in (0, len(episode.steps) + 1):
        with pytest.raises(UsageError, match="--at"):
            fork_episode(episode, at, episode.config, tmp_path / "a")
    with pytest.raises(UsageError, match="step_limit"):
        fork_episode(episode, 5, load_config("swift-only", ["env.step_limit=3"]), tmp_path / "a")
    with pytest.raises(UsageError, match=r"amm\.path"):
        fork_episode(
            episode, 2, load_config("swift-amm", [f"amm.path={tmp_path / 'x.sqlite'}"]), tmp_path / "a"
        )
    assert not (tmp_path / "a").exists()
    with pytest.raises(UsageError, match="not a run directory"):
        read_parent(tmp_path, "13-0000")
    with pytest.raises(UsageError, match="no log of episode"):
        read_parent(parent, "13-9999")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        fork_episode(episode, 2, episode.config, busy)
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]


@pytest.fixture(scope="module")
def attributed(parent: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One of the parent's Gate-1 drops attributed (a seeded sample)."""
    out = tmp_path_factory.mktemp("attr") / "gate"
    return out, attribute(parent, "gate-drop", out, limit=1, seed=0)


def test_attribute_forks_each_gate_drop_with_gate1_off_at_that_step(
    parent: Path, attributed: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    points = mechanism_points(parent, "gate-drop")
    assert len(points) >= 2
    out, payload = attributed
    assert payload["events"] == len(points) and payload["sampled"] == payload["tried"] == 1
    assert payload["replayed"] == 1 and payload["exact"] == 1  # the control repeats the parent
    score = payload["score_strict"]
    assert score["better"] + score["same"] + score["worse"] == 1
    for row in payload["points"]:
        point = Point(**row["point"])
        off = out / "forks" / point.name / "off" / "events" / f"{point.episode}.jsonl"
        events = read_events(off)
        start = events[0]
        assert isinstance(start, EpisodeStart)
        assert start.config["intervention"] == {"mechanism": "gate-drop", "step": point.step}
        # Gate-1 was not consulted for that step's action, and was for the others
        gates = [e for e in events if isinstance(e, GateDecision)]
        assert not [g for g in gates if g.step == point.step] and gates
        control = read_events(out / "forks" / point.name / "control" / "events" / off.name)
        assert [g for g in control if isinstance(g, GateDecision) and g.step == point.step]
    # a rerun plays nothing again
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("metrics.json")}
    again = attribute(parent, "gate-drop", out, limit=1, seed=0)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("metrics.json")} == stamps
    assert again["score_strict"] == score
    with pytest.raises(UsageError, match="not a run directory"):
        attribute(tmp_path, "gate-drop", tmp_path / "none")


def test_a_fresh_jvm_per_episode_leaves_no_history_to_replay(parent: Path, tmp_path: Path) -> None:
    headers = [read_events(p)[0] for p in sorted((parent / "events").glob("*.jsonl"))]
    assert all(isinstance(h, EpisodeStart) and h.jvm is not None for h in headers)
    assert [len(h.jvm.episodes) for h in headers if isinstance(h, EpisodeStart) and h.jvm] == [0, 1, 2, 3, 4]
    out = tmp_path / "fresh"
    config = load_config("swift-only", ["env.step_limit=2", "env.jvm_per_episode=true"])
    evaluate(config, select_episodes("dev", tasks="7,17", limit_per_task=1), out)
    fresh = [read_events(p)[0] for p in sorted((out / "events").glob("*.jsonl"))]
    assert [h.jvm.episodes for h in fresh if isinstance(h, EpisodeStart) and h.jvm] == [[], []]


def test_the_viewer_shows_forks_beside_their_parent_and_the_attribution_page(
    parent: Path, attributed: tuple[Path, dict[str, Any]]
) -> None:
    pytest.importorskip("selenium")
    if shutil.which("chromedriver") is None or shutil.which("chromium") is None:
        pytest.skip("chromium + chromium-driver are missing (.ci/run installs them)")
    from selenium.webdriver.common.by import By

    from fastslow.view.browser import chromium_driver, open_view, wait_for, wait_until
    from fastslow.view.server import serve

    out, _ = attributed
    server = serve([parent, out])
    driver = chromium_driver()
    try:
        runs = json.loads(urlopen(server.url + "api/runs").read())
        forks = [r for r in runs if r["fork"]]
        assert len(forks) == 2 and all(r["fork"]["parent"] == 0 for r in forks)
        (attr,) = json.loads(urlopen(server.url + "api/attributions").read())
        (point,) = attr["points"]
        assert set(point["runs"]) == {"control", "off"}
        # the attribution page: one row per point, linking parent, control and off side by side
        open_view(driver, server.url + "#/attribution/0")
        wait_for(driver, "#attr-points")
        rows = driver.find_elements(By.CSS_SELECTOR, "#attr-points tbody tr")
        assert len(rows) == 1
        href = rows[0].find_element(By.CSS_SELECTOR, "a.attr-compare").get_attribute("href") or ""
        assert href.endswith(f"?runs=0,{point['runs']['control']},{point['runs']['off']}")
        # the parent episode lists its forks, each a link to the compare view
        episode = point["point"]["episode"]
        open_view(driver, server.url + f"#/run/0/episode/{episode}")
        wait_for(driver, "#forks")
        links = driver.find_elements(By.CSS_SELECTOR, "#forks a.fork-link")
        assert len(links) == 2
        # the runs page lists the attribution, not its forks
        open_view(driver, server.url + "#/")
        wait_for(driver, "#attributions")
        wait_until(
            lambda: len(driver.find_elements(By.CSS_SELECTOR, "section.run")) == 1, what="one run card"
        )
    finally:
        driver.quit()
        server.shutdown()


def test_a_sage_round_switched_off_leaves_the_step_to_the_fallback(tmp_path: Path) -> None:
    """SwiftSage with a scripted Sage (the real controller, real ScienceWorld): its one round of the
    episode, forked with the round off, answers nothing and Swift's branch acts instead."""
    run = tmp_path / "run"
    overrides = [
        "sage.model.kind=scripted",
        'sage.model.replies=["1. look around"]',
        "sage.model.cycle=true",
        "env.step_limit=13",
    ]
    # power-component's first dev variation: one Sage round (step 2) in 13 steps of the packaged Swift
    evaluate(load_config("swiftsage", overrides), select_episodes("dev", tasks="25", limit_per_task=1), run)
    (point,) = mechanism_points(run, "sage-round")
    payload = attribute(run, "sage-round", tmp_path / "attr")
    assert payload["tried"] == payload["replayed"] == payload["exact"] == 1
    base = tmp_path / "attr" / "forks" / Point(point.episode, point.step).name
    control = read_events(base / "control" / "events" / f"{point.episode}.jsonl")
    off = read_events(base / "off" / "events" / f"{point.episode}.jsonl")
    step = [e for e in control if isinstance(e, EnvStep) and e.step == point.at]
    assert step and step[0].source == "sage"
    step = [e for e in off if isinstance(e, EnvStep) and e.step == point.at]
    assert step and step[0].source != "sage"
    (call,) = [e for e in off if isinstance(e, SageCall) and e.step == point.step]
    assert call.error == SageOff.OFF and call.model_calls == 0


@pytest.mark.parametrize("mechanism", ["t1-injection", "critic"])
def test_t1_and_the_critic_switched_off_at_one_step(
    parent: Path, tmp_path: Path, mechanism: Mechanism
) -> None:
    """T1 does not run on that step's proposal; the Critic's answer after that step reaches no buffer."""
    payload = attribute(parent, mechanism, tmp_path, limit=1, seed=0)
    assert payload["replayed"] == payload["exact"] == 1
    point = Point(**payload["points"][0]["point"])
    runs = tmp_path / "forks" / point.name
    off = read_events(runs / "off" / "events" / f"{point.episode}.jsonl")
    control = read_events(runs / "control" / "events" / f"{point.episode}.jsonl")

    def acted(events: list[Any]) -> list[Any]:
        if mechanism == "t1-injection":
            return [
                e
                for e in events
                if isinstance(e, MemoryInjection) and e.trigger == "T1" and e.step == point.step
            ]
        return [
            e for e in events if isinstance(e, BufferPush) and e.source == "critic" and e.step == point.step
        ]

    assert acted(control) and not acted(off)
