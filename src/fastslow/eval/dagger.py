"""On-policy training data for Swift: DAgger with ScienceWorld's gold path as the expert (docs/swift.md 2d).

An imitation Swift only ever sees gold states in training; once it strays (a detour, a loop, a wrong
room) it is in states no row showed it, and its errors compound (Ross, Gordon & Bagnell 2011, "A
Reduction of Imitation Learning and Structured Prediction to No-Regret Online Learning"). DAgger plays
the learner's own policy and asks an expert what it should have done in the states the learner
reached; the learner is then retrained on gold and on-policy rows together.

The expert here is the variation's gold path, read from a gold dataset (``fastslow data gold``), and a
pointer into it (``GoldPointer``): the label of a state is the first gold step the agent has not done
yet (``look around`` steps left out), spelled as the state's valid list spells it. The pointer moves
past a gold step when the agent takes it (or one of the next ``LOOKAHEAD`` gold steps, skipping what
it left out), and past the gold step that first scores what the agent's score now is. A state whose
next gold step is not a valid action there gets no row. Nothing here knows a task: the expert is
ScienceWorld's own gold path, the agent the configuration being trained (``swift-only`` with the
weights of the previous round).

Only train variations are played (the gold dataset holds nothing else). Rows have the gold dataset's
format (``swift.data.example``) plus ``agent_action`` and ``source: "dagger"``; an episode's rows are the
labelled states in step order, so ``step`` has gaps and ``data.replay_rows`` (the T5 format) does not
read them: the linear ranker trains on them (``fastslow train swift --data GOLD --data DAGGER``).
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastslow.build import make_agent
from fastslow.config import RunConfig
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.env.config import DEFAULT_WORLD
from fastslow.env.episodes import Episode
from fastslow.env.world import World, get_world
from fastslow.env.wrappers import Env, Wrapper
from fastslow.errors import UsageError
from fastslow.eval.runner import run_episode
from fastslow.events import EndState, ListSink
from fastslow.manifest import record_removed, record_writing, record_written
from fastslow.swift.data import MANIFEST, count_examples, episode_file, example, read_episodes
from fastslow.swift.train import label_of


def _world() -> World:
    """The world DAgger plays: ScienceWorld, whose gold datasets it reads (``data dagger`` refuses
    another world, ``env.world.require_scienceworld``); its tasks, scores and words come through its
    ``World``."""
    return get_world(DEFAULT_WORLD)


LOOKAHEAD = 2
"""How many gold steps past the pointer an agent's action may match (it left out a gold step it did not
need, e.g. opening a door that was open)."""


@dataclass(frozen=True)
class GoldPath:
    """A variation's gold path and the score after each of its steps (from a gold dataset's rows)."""

    actions: tuple[str, ...]
    scores_after: tuple[int, ...]

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]]) -> GoldPath:
        actions = tuple(str(r["gold_action"]) for r in rows)
        after = [int(r["score"]) for r in rows[1:]] + [_world().semantics.success_score]
        return cls(actions, tuple(after))


class GoldPointer:
    """The expert: where on its gold path the agent stands, and the gold step it should take next.

    The path it walks leaves out the gold path's observe-only steps (``WorldSemantics.observe_only``:
    ScienceWorld's look around and inventory): they change
    nothing, and an expert that kept asking for one while the agent works elsewhere would teach Swift to
    look around wherever it strays."""

    def __init__(self, path: GoldPath) -> None:
        observe_only = _world().semantics.observe_only
        kept = [i for i, a in enumerate(path.actions) if a not in observe_only]
        self.path = GoldPath(tuple(path.actions[i] for i in kept), tuple(path.scores_after[i] for i in kept))
        self.next = 0
        """Index of the first gold step not done yet."""

    def label(self, valid: Sequence[str]) -> tuple[str, str] | None:
        """(gold action, its valid-list spelling) of the next gold step, or None: the path is done, or
        its next step is not a valid action in this state."""
        if self.next >= len(self.path.actions):
            return None
        gold = self.path.actions[self.next]
        label = label_of(gold, valid)
        return None if label is None else (gold, label)

    def advance(self, action: str, valid: Sequence[str], score: int) -> None:
        """The agent took ``action`` in a state whose valid list was ``valid`` and reached ``score``."""
        end = min(len(self.path.actions), self.next + 1 + LOOKAHEAD)
        for i in range(self.next, end):
            gold = self.path.actions[i]
            if action == gold or label_of(gold, valid) == action:
                self.next = i + 1
                break
        # A score the gold path reaches at step i is that much progress, whatever route the agent took:
        # the pointer moves past the first gold step that scores as much (not past the steps after it
        # that score nothing: they prepare the next reward).
        if score > 0:
            for i in range(self.next, len(self.path.actions)):
                if self.path.scores_after[i] >= score:
                    if i == 0 or self.path.scores_after[i - 1] < score:
                        self.next = i + 1
                    break


class ExpertRecorder(Wrapper):
    """Records, before each step the agent takes, the state and the expert's label for it."""

    def __init__(self, env: Env, paths: dict[tuple[int, int], GoldPath]) -> None:
        super().__init__(env)
        self.paths = paths
        self.rows: list[dict[str, Any]] = []
        self._traj: Trajectory | None = None
        self._pointer: GoldPointer | None = None
        self._seen: set[tuple[str, str, str, str]] = set()

    def reset(self, task: int | str, variation: int, *, gold: bool = False) -> StepResult:
        first = self.env.reset(task, variation, gold=gold)
        world = _world()
        info = world.task(task)
        self._traj = Trajectory(
            info.task_id, info.name, variation, first.task_description, first, world.semantics
        )
        self._pointer = GoldPointer(self.paths[(info.task_id, variation)])
        self.rows, self._seen = [], set()
        return first

    def step(self, action: str) -> StepResult:
        traj, pointer = self._traj, self._pointer
        if traj is None or pointer is None:
            raise UsageError("ExpertRecorder.step before reset")
        before = traj.current
        labelled = pointer.label(before.valid_actions)
        if labelled is not None:
            last = traj.turns[-1].action if traj.turns else ""
            # A loop revisits one state many times; its row is kept once.
            key = (before.look, before.inventory, last, labelled[1])
            if key not in self._seen:
                self._seen.add(key)
                row = example(traj, labelled[0], labelled[1])
                row.update(agent_action=action, source="dagger")
                self.rows.append(row)
        result = self.env.step(action)
        pointer.advance(action, before.valid_actions, result.score)
        traj.record(action, "swift", result)
        return result


def read_gold_paths(gold: Path) -> dict[tuple[int, int], GoldPath]:
    """Every non-empty episode of a gold dataset as a ``GoldPath``."""
    paths: dict[tuple[int, int], GoldPath] = {}
    for rows in read_episodes(gold):
        if rows:
            paths[(int(rows[0]["task_id"]), int(rows[0]["variation"]))] = GoldPath.from_rows(rows)
    return paths


_WORKER: tuple[ExpertRecorder, Any] | None = None


def _work(
    config_json: str, paths: dict[tuple[int, int], GoldPath], out: str, task_id: int, variation: int
) -> tuple[int, int, int, int, str]:
    """Worker: play one episode with this process's JVM and agent, write its labelled rows atomically."""
    global _WORKER
    config = RunConfig.model_validate_json(config_json)
    if _WORKER is None:
        adapter = get_world(config.env.world).make_env(config.env)
        _WORKER = (ExpertRecorder(adapter, paths), make_agent(config))
    recorder, agent = _WORKER
    outcome = run_episode(recorder, agent, Episode(task_id, variation), config, ListSink())
    if outcome.end is EndState.ERROR:
        recorder.unwrapped.close()  # a JVM that died costs one episode; a rerun resumes it
        return task_id, variation, -1, outcome.final_score, outcome.end.value
    target = episode_file(Path(out), task_id, variation)
    tmp = target.with_name(target.name + ".tmp")
    record_writing(tmp)  # the dataset directory's own, even if this process dies mid-write
    with gzip.open(tmp, "wt", encoding="utf-8") as fh:
        for row in recorder.rows:
            fh.write(json.dumps(row, separators=(",", ":")) + "\n")
    os.replace(tmp, target)
    record_removed(tmp)
    record_written(target)
    return task_id, variation, len(recorder.rows), outcome.final_score, outcome.end.value


@dataclass(frozen=True)
class DaggerSummary:
    episodes: int
    examples: int
    skipped: int


def check_gold(gold: Path) -> None:
    """Refuse, in one line, a ``--gold`` that is not a gold dataset of train variations."""
    if not (gold / MANIFEST).is_file():
        raise UsageError(f"{gold} is not a gold dataset (no {MANIFEST}); build one with `fastslow data gold`")
    manifest = json.loads((gold / MANIFEST).read_text(encoding="utf-8"))
    if manifest.get("split") != "train":
        raise UsageError(f"{gold} holds '{manifest.get('split')}' variations; only train ones may be played")


def build_dagger(
    gold: Path,
    out: Path,
    config: RunConfig,
    workers: int = 2,
    progress: Callable[[str], None] | None = None,
) -> DaggerSummary:
    """Play ``config`` on every variation of the gold dataset ``gold`` and write the expert-labelled
    states into ``out`` (resumable: episodes with a file are skipped)."""
    check_gold(gold)
    paths = read_gold_paths(gold)
    out.mkdir(parents=True, exist_ok=True)
    todo = sorted(k for k in paths if not episode_file(out, *k).exists())
    skipped = len(paths) - len(todo)
    done = 0
    ship = config.model_dump_json(context={"secrets": True})
    if todo:
        with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = [pool.submit(_work, ship, paths, str(out), t, v) for t, v in todo]
            for fut in as_completed(futures):
                task_id, variation, n, score, end = fut.result()
                done += 1
                if progress is not None:
                    what = f"{n} rows, score {score} ({end})" if n >= 0 else "JVM failed, skipped (rerun)"
                    progress(f"[{done}/{len(todo)}] task {task_id} variation {variation}: {what}")
    written = write_manifest(out, gold, config)
    return DaggerSummary(written["episodes"], written["examples"], skipped)


def write_manifest(out: Path, gold: Path, config: RunConfig) -> dict[str, Any]:
    """The dataset's manifest: the gold dataset's split (train), what played, examples per task."""
    import hashlib

    manifest = {
        "split": "train",
        "kind": "dagger",
        "gold": str(gold),
        "gold_manifest_sha256": hashlib.sha256((gold / MANIFEST).read_bytes()).hexdigest(),
        "config": config.name,
        "swift_model_path": str(config.swift.model_path) if config.swift.model_path else None,
        "command": " ".join(["fastslow", *sys.argv[1:]]) if sys.argv else "",
        **count_examples(out),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    record_written(out / MANIFEST)
    return manifest
