"""TextWorldExpress: the benchmark file, the adapter on the real TWX JVM, the gold cache, the semantics
and the bench. One adapter (one JVM) serves the whole module; two tests start their own on purpose."""

from __future__ import annotations

import json
import os
import random
import signal
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from fastslow.core.step import StepResult
from fastslow.env.episodes import Episode
from fastslow.env.textworldexpress import semantics as sem
from fastslow.env.textworldexpress.adapter import TextWorldExpressAdapter
from fastslow.env.textworldexpress.bench import bench_twx
from fastslow.env.textworldexpress.benchmark import (
    FOLDS,
    GAME_NAMES,
    PACKAGE,
    EpisodeSetSpec,
    fold_of,
    gold_file_name,
    load_benchmark,
    parse_benchmark,
)
from fastslow.env.textworldexpress.gold import build, fold_seeds, replay
from fastslow.env.textworldexpress.proxies import with_params
from fastslow.env.wrappers import TimeLimit
from fastslow.errors import EnvError, UsageError
from fastslow.eval.records import EpisodeResult
from fastslow.events import EndState

BENCHMARK = load_benchmark()


@pytest.fixture(scope="module")
def twx() -> Iterator[TextWorldExpressAdapter]:
    adapter = TextWorldExpressAdapter()
    yield adapter
    adapter.close()


def _play(
    env: TextWorldExpressAdapter, game: int | str, seed: int, steps: int, rng_seed: int
) -> list[StepResult]:
    """Reset, then up to ``steps`` random valid actions (stops at the end)."""
    rng = random.Random(rng_seed)
    results = [env.reset(game, seed)]
    while len(results) <= steps and not results[-1].done:
        results.append(env.step(rng.choice(results[-1].valid_actions)))
    return results


# -- the benchmark file ----------------------------------------------------------------------------------


def test_the_benchmark_plays_seven_games_and_says_why_it_leaves_the_eighth_out() -> None:
    assert BENCHMARK.package == PACKAGE
    assert [g.name for g in BENCHMARK.games] == list(GAME_NAMES[:7])  # the package's order: ids unchanged
    assert [(e.name, len(e.why) > 100) for e in BENCHMARK.excluded] == [("peckingorder", True)]
    for spec in BENCHMARK.games:
        assert spec.step_limit >= 30 and len(spec.why) > 100
        if spec.tales:  # harder than TALES' setting wherever there is a parameter to turn
            assert spec.params != spec.tales, spec.name
    sizes = {name: (s.fold, s.per_game) for name, s in BENCHMARK.sets.items()}
    assert sizes == {
        "test": ("test", 100),
        "dev": ("dev", 20),
        "warmup": ("train", 5),
        "train": ("train", 200),
    }


def test_episode_sets_list_game_ids_and_seeds() -> None:
    test = BENCHMARK.episodes("test")
    assert len(test) == 700 and test[0] == Episode(0, 20000) and test[-1] == Episode(6, 20099)
    coin = BENCHMARK.episodes("dev", games=["coin"], limit_per_game=3)
    assert [e.episode_id for e in coin] == ["02-10000", "02-10001", "02-10002"]
    assert Episode.from_id("02-10001") == coin[1]
    warmup = BENCHMARK.episodes("warmup")
    assert len(warmup) == 35 and {e.variation for e in warmup} == set(range(5))
    with pytest.raises(UsageError, match="unknown episode set"):
        BENCHMARK.episodes("all")
    with pytest.raises(UsageError, match="unknown game id 7"):
        BENCHMARK.episodes("test", games=[7])
    with pytest.raises(UsageError, match="unknown TextWorldExpress game 'peckingorder'"):
        BENCHMARK.episodes("test", games=["peckingorder"])  # excluded: not a game of the benchmark


def test_folds_and_game_lookup() -> None:
    assert (fold_of(0), fold_of(10999), fold_of(20000)) == ("train", "dev", "test")
    for bad in (-1, 1000, 21000):
        with pytest.raises(UsageError, match="no TextWorldExpress fold"):
            fold_of(bad)
    assert BENCHMARK.game("twc")[0] == BENCHMARK.game(1)[0] == BENCHMARK.game("1")[0] == 1
    with pytest.raises(UsageError, match="unknown TextWorldExpress game 'zork'"):
        BENCHMARK.game("zork")


def test_the_benchmark_file_refuses_unknown_keys_and_games() -> None:
    text = (resources.files("fastslow.env.textworldexpress") / "benchmark.yaml").read_text(encoding="utf-8")
    with pytest.raises(UsageError, match=r"games\.0\.step_limt: Extra inputs are not permitted"):
        parse_benchmark(text.replace("step_limit: 100", "step_limt: 100", 1), "b.yaml")
    with pytest.raises(UsageError, match="unknown TextWorldExpress game 'zork'"):
        parse_benchmark(text.replace("name: coin", "name: zork"), "b.yaml")
    with pytest.raises(UsageError, match="textworld-express==9"):
        parse_benchmark(text.replace(PACKAGE, "textworld-express==9"), "b.yaml")
    # every TWX game is played or excluded, once: an excluded game is recorded, not forgotten
    with pytest.raises(UsageError, match="peckingorder is neither"):
        parse_benchmark(text[: text.index("excluded:")], "b.yaml")
    with pytest.raises(UsageError, match="listed twice"):
        parse_benchmark(text + "  - {name: coin, why: played and excluded}\n", "b.yaml")
    with pytest.raises(UsageError, match="unknown TextWorldExpress game 'zork'"):
        parse_benchmark(text + "  - {name: zork, why: no such game}\n", "b.yaml")
    with pytest.raises(UsageError, match=r"excluded\.0\.reason: Extra inputs are not permitted"):
        parse_benchmark(
            text.replace("    why: >-\n      No generation", "    reason: >-\n      No generation"), "b.yaml"
        )


# -- the adapter -------------------------------------------------------------------------------------------


def test_folds_are_the_packages(twx: TextWorldExpressAdapter) -> None:
    twx.reset("coin", 20000)
    server = twx._jvm.new_interface()  # type: ignore[union-attr]  # reset started it
    for fold, seeds in FOLDS.items():
        java = {"train": server.getSeedsTrain, "dev": server.getSeedsDev, "test": server.getSeedsTest}[fold]()
        assert (java.size(), java.get(0), java.get(java.size() - 1)) == (len(seeds), seeds[0], seeds[-1])


def test_reset_starts_every_game_at_step_zero(twx: TextWorldExpressAdapter) -> None:
    pid = None
    for game_id, spec in enumerate(BENCHMARK.games):
        first = twx.reset(spec.name, 20000)
        assert (first.steps, first.moves, first.score, first.reward, first.end) == (
            0,
            0,
            0,
            0,
            EndState.RUNNING,
        )
        assert first.valid_actions and first.task_description and twx.game_id == game_id
        if spec.name != "simonsays":  # no rooms in Simon says: its look is empty
            assert first.observation == first.look and sem.location(first.look)
        pid = pid or twx.jvm_pid
        assert twx.jvm_pid == pid  # every game in the one JVM
    assert twx.fold == "test" and twx.gold_actions == () and twx.gold_source == ""


def test_an_unknown_action_changes_nothing(twx: TextWorldExpressAdapter) -> None:
    first = twx.reset("coin", 20000)
    after = twx.step("dance the tango")
    assert after.observation == sem.UNKNOWN_ACTION
    assert sem.classify_feedback(after.observation) is sem.Feedback.INVALID
    assert (after.score, after.reward, after.steps, after.end) == (0, 0, 1, EndState.RUNNING)
    assert after.valid_actions == first.valid_actions and after.look == first.look


def test_failure_scores_minus_100_and_both_conventions_read_it(twx: TextWorldExpressAdapter) -> None:
    twx.reset("arithmetic", 20000, gold=True)
    *before, _ = twx.gold_actions  # ... take <answer>; the last action puts it in the box
    best = 0
    for action in before:
        best = max(best, twx.step(action).score)
    assert best == 50  # reading the problem scores
    failed = twx.step("put math problem in box")  # the wrong item in the box: TWX's failure flag
    assert (failed.end, failed.score, failed.reward) == (EndState.FAILURE, -100, -150)
    with pytest.raises(EnvError, match="episode has ended"):
        twx.step("look around")
    episode = EpisodeResult(
        episode_id="04-20000", task_id=4, variation=20000, end=failed.end, final_score=failed.score,
        steps=failed.steps, wall_s=0.0, error=None, best_score=best,
    )  # fmt: skip
    assert (episode.score, episode.score_strict, episode.success) == (50.0, 0.0, False)


def test_simon_says_incorrect_is_a_failure(twx: TextWorldExpressAdapter) -> None:
    first = twx.reset("simonsays", 20000, gold=True)
    wrong = next(a for a in first.valid_actions if a != twx.gold_actions[0])
    result = twx.step(wrong)
    assert result.observation == sem.INCORRECT and result.end is EndState.FAILURE and result.score == -100
    assert sem.classify_feedback(result.observation) is sem.Feedback.FAILURE


def test_twc_score_goes_down_when_an_item_leaves_its_place(twx: TextWorldExpressAdapter) -> None:
    twx.reset("twc", 20000, gold=True)
    for action in twx.gold_actions:
        result = twx.step(action)
        if action.startswith("put "):
            break
    item = sem.arguments(action)[0]
    back = twx.step(f"take {item}")
    assert back.reward < 0 and back.score == result.score + back.reward and back.end is EndState.RUNNING


def test_one_jvm_for_many_games_plays_as_fresh_jvms(twx: TextWorldExpressAdapter) -> None:
    """Episodes of every game played back to back on the module's JVM (after every other test's
    episodes) equal the same episodes played in the opposite order on a new JVM."""
    episodes = [(spec.name, 10000 + i) for i, spec in enumerate(BENCHMARK.games)]
    shared = {e: _play(twx, *e, steps=25, rng_seed=e[1]) for e in episodes}
    with TextWorldExpressAdapter() as fresh:
        for e in reversed(episodes):
            assert _play(fresh, *e, steps=25, rng_seed=e[1]) == shared[e], e
        assert fresh.jvm_pid != twx.jvm_pid


def test_a_generated_gold_path_leaves_the_game_as_it_was(twx: TextWorldExpressAdapter) -> None:
    seed = 999  # train, beyond the cached 200: TWX generates the path
    plain = twx.reset("cookingworld", seed)
    with_gold = twx.reset("cookingworld", seed, gold=True)
    path = twx.gold_actions
    assert twx.gold_source == "generated" and path
    assert with_gold == plain
    assert replay(twx, "cookingworld", seed, path) == (EndState.SUCCESS, len(path))


# -- the gold cache ----------------------------------------------------------------------------------


def test_the_gold_cache_matches_the_benchmark() -> None:
    data_dir = resources.files("fastslow.env.textworldexpress") / "data"
    for fold, seeds in fold_seeds(BENCHMARK).items():
        data = json.loads((data_dir / gold_file_name(fold)).read_text(encoding="utf-8"))
        prov = data["provenance"]
        assert prov["package"] == PACKAGE and prov["fold"] == fold
        assert prov["params"] == {g.name: g.params for g in BENCHMARK.games}
        assert list(data["games"]) == [g.name for g in BENCHMARK.games]  # no excluded game's paths
        episodes = len(BENCHMARK.games) * len(seeds)
        assert prov["oracle"] == {"episodes": episodes, "success": episodes}
        assert prov["date"] and prov["command"].startswith("python -m fastslow.env.textworldexpress.gold")
        for spec in BENCHMARK.games:
            paths = data["games"][spec.name]
            assert sorted(map(int, paths)) == list(seeds)
            assert max(map(len, paths.values())) <= spec.step_limit


def test_cached_gold_paths_reach_success_on_a_test_sample(twx: TextWorldExpressAdapter) -> None:
    """The ``oracle`` check on 10 test episodes of every game: the cached path, under the game's step
    limit, wins at its last action (the builder checked all 700; its count is in the provenance)."""
    for spec in BENCHMARK.games:
        env = TimeLimit(twx, spec.step_limit)
        for seed in range(20000, 20100, 10):
            result = env.reset(spec.name, seed, gold=True)
            assert twx.gold_source == "cache"
            for action in twx.gold_actions:
                assert not result.done
                result = env.step(action)
            assert (result.end, result.score, result.steps) == (EndState.SUCCESS, 100, len(twx.gold_actions))


def test_a_stale_gold_cache_is_refused(tmp_path: Path) -> None:
    text = (resources.files("fastslow.env.textworldexpress") / "benchmark.yaml").read_text(encoding="utf-8")
    (tmp_path / "benchmark.yaml").write_text(text.replace("numLocations: 11", "numLocations: 10"))
    (tmp_path / "data").mkdir()
    shipped = resources.files("fastslow.env.textworldexpress") / "data" / "gold-test.json"
    (tmp_path / "data" / "gold-test.json").write_text(shipped.read_text(encoding="utf-8"))
    changed = load_benchmark(tmp_path / "benchmark.yaml")
    with pytest.raises(UsageError, match="rebuild it"):
        changed.gold_path("coin", 20000)


def test_a_partial_rebuild_keeps_the_other_games_paths(tmp_path: Path) -> None:
    """``gold.build(..., games=[...])`` (``--games``) regenerates only the games it names: the others keep
    the existing file's paths, only for the benchmark's parameters, a game no longer in the benchmark
    is dropped, and the oracle check still replays every game."""
    dev = EpisodeSetSpec(fold="dev", per_game=2, description="two dev seeds")
    small = BENCHMARK.model_copy(update={"sets": {"dev": dev}})
    shipped = json.loads(
        (resources.files("fastslow.env.textworldexpress") / "data" / "gold-dev.json").read_text()
    )
    old = {game: {s: paths[s] for s in ("10000", "10001")} for game, paths in shipped["games"].items()}
    old["peckingorder"] = {"10000": ["read instructions"]}  # excluded since: dropped
    (tmp_path / "gold-dev.json").write_text(json.dumps({"provenance": shipped["provenance"], "games": old}))
    with pytest.raises(EnvError, match="rebuild coin too"):  # coin's paths are for other parameters
        build(
            with_params(small, "coin", {"numLocations": 10}, None), ["dev"], 1, tmp_path, games=["mapreader"]
        )
    prov = build(small, ["dev"], 1, tmp_path, "test", games=["mapreader"])["dev"]
    data = json.loads((tmp_path / "gold-dev.json").read_text())
    others = [g.name for g in BENCHMARK.games if g.name != "mapreader"]
    assert list(data["games"]) == [g.name for g in BENCHMARK.games]
    assert {g: data["games"][g] for g in others} == {g: old[g] for g in others}
    assert prov["kept"] == {
        "games": others,
        "date": shipped["provenance"]["date"],
        "command": shipped["provenance"]["command"],
    }
    assert prov["oracle"] == {"episodes": 14, "success": 14} and prov["command"] == "test"


# -- errors and the JVM ------------------------------------------------------------------------------


def test_jvm_failures_and_bad_input() -> None:
    env = TextWorldExpressAdapter(with_params(BENCHMARK, "twc", {"numLocations": 9}, None))
    try:
        with pytest.raises(EnvError, match="no episode loaded"):
            env.step("look around")
        with pytest.raises(UsageError, match="seed 5000 is in no"):
            env.reset("coin", 5000)
        with pytest.raises(UsageError, match="TextWorldExpress refused twc 'numLocations=9'"):
            env.reset("twc", 0)
        env.reset("coin", 0)
        pid = env.jvm_pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # the JVM this test started
        with pytest.raises(EnvError, match="TextWorldExpress JVM failed during step"):
            env.step("look around")
        assert env.jvm_pid is None
        with pytest.raises(EnvError, match="no episode loaded"):
            env.step("look around")
        assert env.reset("coin", 0).steps == 0 and env.jvm_pid not in (None, pid)
    finally:
        env.close()
    assert env.jvm_pid is None


# -- semantics on real observations ----------------------------------------------------------------------


def test_semantics_read_real_observations(twx: TextWorldExpressAdapter) -> None:
    first = twx.reset("coin", 20000)
    assert sem.location(first.look) == "kitchen"
    assert sem.exits(first.look) == {
        "north": "closed plain door",
        "south": "closed sliding patio door",
        "east": "corridor",
        "west": "living room",
    }
    assert sem.inventory_items(first.inventory) == [] and sem.inventory_capacity(first.inventory) == 2
    feedback = {
        a: sem.classify_feedback(twx.step(a).observation) for a in ["move north", "open door to north"]
    }
    feedback["again"] = sem.classify_feedback(twx.step("open door to north").observation)
    assert list(feedback.values()) == [sem.Feedback.FAILURE, sem.Feedback.OK, sem.Feedback.NO_EFFECT]
    moved = twx.step("move north")
    assert sem.location(moved.observation) == "pantry" == sem.location(moved.look)
    assert sem.direction("move north") == "north" and sem.arguments("move north") == []

    first = twx.reset("cookingworld", 20000, gold=True)
    assert sem.inventory_capacity(first.inventory) == 5
    for action in twx.gold_actions[:4]:  # look around, take cookbook, read cookbook, take knife
        result = twx.step(action)
    assert sem.inventory_items(result.inventory) == ["cookbook", "knife"]
    assert sem.to_valid("Take the Cookbook.", ("read cookbook", "take cookbook")) == "take cookbook"
    assert sem.to_valid("fly away", ("take cookbook",)) is None


def test_every_valid_action_parses(twx: TextWorldExpressAdapter) -> None:
    """Verb and objects of every valid action along gold paths of every game: the verb is a prefix of
    the action's comparison form, "put"/"cook" have two objects, objects are words of the action."""
    seen: set[str] = set()
    for spec in BENCHMARK.games:
        for seed in (20001, 10001):
            result = twx.reset(spec.name, seed, gold=True)
            seen.update(result.valid_actions)
            for action in twx.gold_actions:
                result = twx.step(action)
                seen.update(result.valid_actions)
    verbs = set()
    for action in seen:
        verb, objects = sem.verb_of(action), sem.arguments(action)
        verbs.add(verb)
        assert sem.normalize(action).startswith(verb), action
        if verb in ("put", "cook"):
            assert len(objects) == 2 and all(objects), action
        assert all(o in action for o in objects), action
        assert sem.to_valid(action.upper(), tuple(seen)) == action
    assert {"take", "put", "move", "open", "look around", "inventory", "read", "cook"} <= verbs


# -- the bench -------------------------------------------------------------------------------------------


def test_bench_twx_plays_both_apis_identically() -> None:
    result = bench_twx(steps=300)
    head = result.headline()
    assert head["identical"], result.mismatches[:3]
    assert head["steps"] == 300 and head["raw_steps_per_s"] > 0 and head["ours_steps_per_s"] > 0
