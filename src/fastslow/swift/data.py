"""Gold-trajectory dataset for training Swift by imitation (paper §3, SwiftSage's Swift).

``fastslow data gold --split train --out DIR`` replays ScienceWorld's gold path of train-split
variations of all 30 tasks and writes one gzipped JSONL file per episode: every step holds what
SwiftSage's Swift reads (task; time and score; recent actions with reward and observation; look;
inventory; visited rooms), the valid-action set and the gold action. A manifest records examples per
task, the ScienceWorld version and the command. Only train variations are accepted, so dev and test
variations never enter training data. A row keeps the last 10 turns; inputs that read the whole
episode (the Flan-T5 format, ``swift/t5_format.py``) rebuild its trajectory from consecutive rows
(``replay_rows``), so training renders exactly what inference renders.

Gold paths are written for the full game, so under the "easy" simplification they are rewritten
before replay (docs/swift.md, "Gold-trajectory dataset"): door opening is dropped (doors start open),
walking becomes teleporting and consecutive teleports merge (``WorldSemantics.simplify_gold``;
ScienceWorld's rewrite and its gold paths' other spellings, ``gold_spellings``, are in its package,
``env.scienceworld.gold``). The rewritten path is kept only if it still reaches score 100; otherwise
the original path is replayed. ScienceWorld's adapter, tasks and scores come through its ``World``.

``--world textworldexpress`` builds the same rows and files from another world's train gold paths,
through the world seam (``build_world_gold``, the section at the end); ScienceWorld's path is as it was.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fastslow.core.semantics import WorldSemantics
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.env.config import DEFAULT_WORLD, EnvConfig
from fastslow.env.tasks import Split
from fastslow.env.world import get_world
from fastslow.env.wrappers import Env, TimeLimit
from fastslow.errors import EnvError, UsageError
from fastslow.events import EndState
from fastslow.manifest import record_removed, record_writing, record_written

if TYPE_CHECKING:
    from fastslow.env.world import WorldEnv

MANIFEST = "manifest.json"
HISTORY_TURNS = 10
"""Recent actions kept in each example (SwiftSage's Swift input uses the last 10)."""
DEFAULT_PER_TASK = 10
"""Train variations replayed per task: tasks with hundreds of variations are subsampled."""
REPLAY_STEP_LIMIT = 1000


def match_valid(
    action: str, valid: Sequence[str] | set[str], semantics: WorldSemantics | None = None
) -> str | None:
    """The valid action that a gold action denotes, or None if it has no verbatim match nor one of the
    world's other spellings (``WorldSemantics.gold_spellings``; ``semantics`` None: the default
    world's, ScienceWorld)."""
    pool = valid if isinstance(valid, set) else set(valid)
    if action in pool:
        return action
    for alt in (semantics or get_world().semantics).gold_spellings(action):
        if alt in pool:
            return alt
    # Gold paths capitalise some names ("unknown substance B") that the valid list writes lower-case.
    lowered = action.lower()
    if lowered != action:
        return match_valid(lowered, pool, semantics)
    return None


def rewrite_for_easy(actions: Sequence[str]) -> list[str]:
    """ScienceWorld's gold path rewritten for its "easy" simplification (module docstring; the rewrite is
    ScienceWorld's, ``WorldSemantics.simplify_gold``)."""
    return get_world(DEFAULT_WORLD).semantics.simplify_gold(actions)


def example(traj: Trajectory, gold: str | None, label: str | None) -> dict[str, Any]:
    """One training row: the state Swift sees before acting, and the gold action."""
    cur = traj.current
    return {
        "task_id": traj.task_id,
        "task_name": traj.task_name,
        "variation": traj.variation,
        "step": cur.steps,
        "task_description": traj.task_description,
        "moves": cur.moves,
        "score": cur.score,
        "history": [
            {"action": t.action, "observation": t.observation, "reward": t.reward}
            for t in traj.recent(HISTORY_TURNS)
        ],
        "look": cur.look,
        "inventory": cur.inventory,
        "visited_rooms": list(traj.visited_rooms),
        "valid_actions": list(cur.valid_actions),
        "gold_action": gold,
        "label": label,
    }


def _replay(env: Env, task_id: int, variation: int, path: Sequence[str]) -> list[dict[str, Any]] | None:
    """Replay ``path`` in ScienceWorld; the rows if it reaches score 100, else None."""
    world = get_world(DEFAULT_WORLD)
    first = env.reset(task_id, variation)
    traj = Trajectory(
        task_id, world.task(task_id).name, variation, first.task_description, first, world.semantics
    )
    return _follow(env, traj, path, world.semantics.success_score)


def _follow(env: Env, traj: Trajectory, path: Sequence[str], success: int) -> list[dict[str, Any]] | None:
    """Play ``path`` from the state ``traj`` holds (just reset), a row before each step; the rows if
    the episode reaches ``success``, else None."""
    rows: list[dict[str, Any]] = []
    result: StepResult = traj.current
    for action in path:
        if result.done:
            break
        rows.append(example(traj, action, match_valid(action, result.valid_actions, traj.semantics)))
        result = env.step(action)
        traj.record(action, "oracle", result)
    return rows if result.score >= success else None


def replay_episode(env: Env, task_id: int, variation: int) -> tuple[list[dict[str, Any]], bool]:
    """Rows of one gold episode and whether the easy-rewritten path was used."""
    env.reset(task_id, variation, gold=True)
    gold = list(env.gold_actions)
    rewritten = get_world(DEFAULT_WORLD).semantics.simplify_gold(gold)
    if rewritten != gold:
        rows = _replay(env, task_id, variation, rewritten)
        if rows is not None:
            return rows, True
    rows = _replay(env, task_id, variation, gold)
    return (rows or []), False


def select_train_variations(per_task: int, tasks: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """Train variations to replay: evenly spread over each task's train split (more object diversity);
    ``per_task`` 0: all of them (3,592)."""
    ranked: list[tuple[int, int, int]] = []
    for info in get_world(DEFAULT_WORLD).tasks():
        if tasks is not None and info.task_id not in tasks:
            continue
        train = info.variations["train"]
        n = per_task if per_task > 0 else len(train)
        stride = max(1, len(train) // n)
        ranked.extend((rank, info.task_id, v) for rank, v in enumerate(train[::stride][:n]))
    # Round-robin over tasks, so a run stopped early still covers every task.
    return [(t, v) for _, t, v in sorted(ranked)]


def episode_file(out: Path, task_id: int, variation: int) -> Path:
    return out / f"{task_id:02d}-{variation:04d}.jsonl.gz"


_WORKER_ENV: TimeLimit | None = None


def _work(out: str, task_id: int, variation: int, simplification: str) -> tuple[int, int, int, bool]:
    """Worker: replay one episode with this process's own JVM and write its file atomically."""
    global _WORKER_ENV
    if _WORKER_ENV is None:
        adapter = get_world(DEFAULT_WORLD).make_env(EnvConfig(simplification=simplification))
        _WORKER_ENV = TimeLimit(adapter, REPLAY_STEP_LIMIT)
    try:
        rows, rewritten = replay_episode(_WORKER_ENV, task_id, variation)
    except EnvError:
        # A JVM that dies (e.g. killed for memory) costs one episode, not the run; a rerun resumes it.
        _WORKER_ENV.close()
        return task_id, variation, -1, False
    write_episode(Path(out), task_id, variation, rows)
    return task_id, variation, len(rows), rewritten


def write_episode(out: Path, task_id: int, variation: int, rows: Sequence[dict[str, Any]]) -> None:
    """An episode's rows into its file of the dataset directory ``out``, atomically, recorded in the
    directory's manifest of owned files (``fastslow.manifest``)."""
    target = episode_file(out, task_id, variation)
    tmp = target.with_name(target.name + ".tmp")
    record_writing(tmp)  # the dataset directory's own, even if this process dies mid-write
    with gzip.open(tmp, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, separators=(",", ":")) + "\n")
    os.replace(tmp, target)
    record_removed(tmp)
    record_written(target)


@dataclass(frozen=True)
class GoldSummary:
    episodes: int
    examples: int
    skipped: int


def build_gold(
    out: Path,
    split: Split = "train",
    per_task: int = DEFAULT_PER_TASK,
    tasks: Sequence[int] | None = None,
    workers: int = 2,
    simplification: str = "easy",
    progress: Callable[[str], None] | None = None,
    world: str = DEFAULT_WORLD,
) -> GoldSummary:
    """Replay gold paths into ``out`` (resumable: episodes with a file already are skipped). ``world``:
    ScienceWorld's own path (this function), or another world's train gold paths through the world
    seam (``build_world_gold``; ``simplification`` is ScienceWorld's and unused there)."""
    if split != "train":
        raise UsageError(f"only the train split may become training data (got '{split}')")
    if world != DEFAULT_WORLD:
        return build_world_gold(out, world, per_task, tasks, workers, progress)
    out.mkdir(parents=True, exist_ok=True)
    todo = [
        (t, v) for t, v in select_train_variations(per_task, tasks) if not episode_file(out, t, v).exists()
    ]
    skipped = len(select_train_variations(per_task, tasks)) - len(todo)
    done = 0
    if todo:
        with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = [pool.submit(_work, str(out), t, v, simplification) for t, v in todo]
            for fut in as_completed(futures):
                task_id, variation, n, rewritten = fut.result()
                done += 1
                if progress is not None:
                    tag = "easy-rewritten" if rewritten else "original"
                    what = f"{n} steps ({tag})" if n >= 0 else "JVM failed, skipped (rerun to resume)"
                    progress(f"[{done}/{len(todo)}] task {task_id} variation {variation}: {what}")
    manifest = write_manifest(out, split, per_task, simplification)
    return GoldSummary(manifest["episodes"], manifest["examples"], skipped)


def count_examples(out: Path) -> dict[str, Any]:
    """What a dataset directory holds: its episodes ("TT-VVVV"), examples in all and per task (the
    counting part of a manifest, gold or DAgger)."""
    per_task: dict[str, int] = {}
    episodes: list[str] = []
    total = 0
    for path in sorted(out.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            n = sum(1 for _ in fh)
        per_task[path.name[:2]] = per_task.get(path.name[:2], 0) + n
        episodes.append(path.name.removesuffix(".jsonl.gz"))
        total += n
    return {
        "episodes": len(episodes),
        "examples": total,
        "examples_per_task": per_task,
        "episode_ids": episodes,
    }


def write_manifest(out: Path, split: str, per_task: int, simplification: str) -> dict[str, Any]:
    import scienceworld

    manifest = {
        "split": split,
        "per_task": per_task,
        "simplification": simplification,
        "scienceworld_version": scienceworld.__version__,
        "command": " ".join(["fastslow", *sys.argv[1:]]) if sys.argv else "",
        **count_examples(out),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    record_written(out / MANIFEST)
    return manifest


# -- another world's train gold paths, through the world seam ----------------------------------------
#
# ScienceWorld's path above predates the seam and stays as it is. Another world's dataset is built from
# what its ``World`` answers: the episodes of its ``train`` set (``select``), its adapter
# (``make_env``) and step limits (``step_limit``), its semantics (the rows' visited rooms), and the
# one thing the World protocol does not hold, where a train episode's gold path comes from: the world's
# ``training_gold`` (``TrainingGold``; TextWorldExpress: ``env.textworldexpress.training``).

TRAINING_GOLD = "training_gold"
"""The ``World`` attribute that makes a world's train gold paths Swift's training data."""


class TrainingGold(Protocol):
    """What ``data gold`` asks of a world besides the ``World`` protocol (TextWorldExpress:
    ``env.textworldexpress.training.TrainingGold``)."""

    def path(self, task_id: int, variation: int) -> Sequence[str] | None:
        """The train episode's gold path as the world verified it, None if it has none;
        ``UsageError`` for an episode that is not a train one."""
        ...

    def provenance(self) -> dict[str, Any]:
        """What the dataset's manifest records of the world's side (versions, parameters, the gold
        paths' source)."""
        ...


def training_gold(name: str) -> TrainingGold:
    """The world's ``training_gold``; ``UsageError`` for a world that has none."""
    source: TrainingGold | None = getattr(get_world(name), TRAINING_GOLD, None)
    if source is None:
        raise UsageError(
            f"data gold has no train gold paths of env.world={name} (its World has no {TRAINING_GOLD})"
        )
    return source


def select_world_episodes(
    name: str, per_task: int, tasks: Sequence[int] | None = None
) -> list[tuple[int, int]]:
    """The world's ``train`` set (the first ``per_task`` of each task's episodes; 0: all), of ``tasks``
    only when given, round-robin over the tasks so a run stopped early covers every task."""
    chosen = get_world(name).select(
        "train", ",".join(str(t) for t in tasks) if tasks else None, None, per_task or None
    )
    rank: dict[int, int] = {}
    ranked: list[tuple[int, int, int, int]] = []
    order = {t: i for i, t in enumerate(dict.fromkeys(e.task_id for e in chosen))}
    for e in chosen:
        rank[e.task_id] = rank.get(e.task_id, -1) + 1
        ranked.append((rank[e.task_id], order[e.task_id], e.task_id, e.variation))
    return [(t, v) for _, _, t, v in sorted(ranked)]


def world_task_ids(name: str, tasks: str | None) -> list[int] | None:
    """The task ids a ``--tasks`` selection names in world ``name`` (its own syntax: TextWorldExpress
    takes game names too), in the order given; None for none."""
    if not tasks:
        return None
    return list(dict.fromkeys(e.task_id for e in get_world(name).select("train", tasks)))


def check_world_gold(name: str, per_task: int, tasks: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """The episodes ``build_world_gold`` replays (``select_world_episodes``), or ``UsageError`` when
    the world has no training gold or an episode has no gold path: before anything is written."""
    source = training_gold(name)
    chosen = select_world_episodes(name, per_task, tasks)
    missing = [f"{t} {v}" for t, v in chosen if not source.path(t, v)]
    if missing:
        raise UsageError(f"{name} has no gold path of train episodes {', '.join(missing[:5])}")
    return chosen


def replay_world_episode(env: WorldEnv, name: str, task_id: int, variation: int) -> list[dict[str, Any]]:
    """Rows of one train episode of world ``name``: its gold path (``training_gold``) replayed on
    ``env`` under the task's step limit; no rows if the path does not reach success."""
    world = get_world(name)
    path = training_gold(name).path(task_id, variation)
    if not path:
        raise UsageError(f"{name} has no gold path of train episode {task_id} {variation}")
    limited = TimeLimit(env, world.step_limit(task_id, REPLAY_STEP_LIMIT))
    first = limited.reset(task_id, variation)
    info = world.task(task_id)
    traj = Trajectory(task_id, info.name, variation, first.task_description, first, world.semantics)
    return _follow(limited, traj, path, world.semantics.success_score) or []


_WORLD_ENVS: dict[str, WorldEnv] = {}


def _work_world(name: str, out: str, task_id: int, variation: int) -> tuple[int, int, int]:
    """Worker: replay one episode of world ``name`` on this process's own adapter, write its file."""
    env = _WORLD_ENVS.get(name)
    if env is None:
        env = _WORLD_ENVS[name] = get_world(name).make_env(EnvConfig.model_validate({"world": name}))
    try:
        rows = replay_world_episode(env, name, task_id, variation)
    except EnvError:
        env.close()  # its next reset starts a fresh JVM; a rerun resumes this episode
        return task_id, variation, -1
    write_episode(Path(out), task_id, variation, rows)
    return task_id, variation, len(rows)


def build_world_gold(
    out: Path,
    name: str,
    per_task: int = DEFAULT_PER_TASK,
    tasks: Sequence[int] | None = None,
    workers: int = 2,
    progress: Callable[[str], None] | None = None,
) -> GoldSummary:
    """``build_gold`` for world ``name`` (not ScienceWorld): its train episodes' gold paths replayed
    into ``out``, resumable, one adapter per worker process. Every refusal (no training gold, an
    episode without a gold path) comes before anything is written."""
    source = training_gold(name)
    chosen = check_world_gold(name, per_task, tasks)
    world = get_world(name)
    out.mkdir(parents=True, exist_ok=True)
    todo = [(t, v) for t, v in chosen if not episode_file(out, t, v).exists()]
    done = 0
    if todo:
        with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = [pool.submit(_work_world, name, str(out), t, v) for t, v in todo]
            for fut in as_completed(futures):
                task_id, variation, n = fut.result()
                done += 1
                if progress is not None:
                    what = f"{n} steps" if n >= 0 else "JVM failed, skipped (rerun to resume)"
                    game = world.task(task_id).name
                    progress(f"[{done}/{len(todo)}] {game} ({task_id}) variation {variation}: {what}")
    manifest = write_world_manifest(out, name, per_task, source)
    return GoldSummary(manifest["episodes"], manifest["examples"], len(chosen) - len(todo))


def write_world_manifest(out: Path, name: str, per_task: int, source: TrainingGold) -> dict[str, Any]:
    """The manifest of another world's dataset: the world, the set and selection, the world's side
    (``TrainingGold.provenance``), package versions, the command and the counts."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(package: str) -> str | None:
        try:
            return version(package)
        except PackageNotFoundError:
            return None

    manifest = {
        "world": name,
        "split": "train",
        "set": "train",
        "per_task": per_task,
        **source.provenance(),
        "versions": {p: installed(p) for p in get_world(name).packages},
        "command": " ".join(["fastslow", *sys.argv[1:]]) if sys.argv else "",
        **count_examples(out),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    record_written(out / MANIFEST)
    return manifest


def episode_name(path: Path) -> str:
    """An episode file's name as examples and weights' ``held_out`` list it ("TT-VVVV")."""
    return path.name.removesuffix(".jsonl.gz")


def require_dataset(data: Path) -> None:
    """Refuse, in one line, a directory that is not a dataset (no manifest)."""
    if not (data / MANIFEST).is_file():
        raise UsageError(f"{data} is not a gold dataset (no {MANIFEST}); build one with `fastslow data gold`")


def read_episodes(data: Path, only: Collection[str] | None = None) -> Iterator[list[dict[str, Any]]]:
    """The examples of a dataset directory, one list per episode, in step order; with ``only``, just
    the episodes it names (the others are not decompressed)."""
    require_dataset(data)
    for path in sorted(data.glob("*.jsonl.gz")):
        if only is not None and episode_name(path) not in only:
            continue
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            yield [json.loads(line) for line in fh]


def read_rows(data: Path, only: Collection[str] | None = None) -> Iterator[dict[str, Any]]:
    """Every example of a dataset directory (or of the episodes ``only`` names), episode by episode."""
    for rows in read_episodes(data, only):
        yield from rows


def _state_of(row: dict[str, Any]) -> StepResult:
    """The state a row was taken in; its observation is that of the step that led there ("" at reset)."""
    last = row["history"][-1] if row["history"] else None
    return StepResult(
        observation=str(last["observation"]) if last else "",
        score=int(row["score"]),
        reward=int(last["reward"]) if last else 0,
        moves=int(row["moves"]),
        steps=int(row["step"]),
        look=str(row["look"]),
        inventory=str(row["inventory"]),
        task_description=str(row["task_description"]),
        valid_actions=tuple(str(a) for a in row["valid_actions"]),
        end=EndState.RUNNING,
    )


def replay_rows(
    rows: Sequence[dict[str, Any]], semantics: WorldSemantics
) -> Iterator[tuple[dict[str, Any], Trajectory]]:
    """Each row of one episode with the whole trajectory up to it, rebuilt from the rows (of the world
    whose ``semantics`` they are read with).

    A row keeps only the last ``HISTORY_TURNS`` turns, but consecutive rows hold every step: the newest
    turn of row k+1 is the step taken at row k. Inputs that read the whole episode (the T5 format's
    history cleaning, its visited rooms) are built from this trajectory, as at inference. The trajectory
    is one object advanced in place: read it before taking the next row.
    """
    traj: Trajectory | None = None
    for i, row in enumerate(rows):
        if int(row["step"]) != i:
            raise UsageError(f"episode rows out of order: row {i} is step {row['step']}")
        state = _state_of(row)
        if traj is None:
            traj = Trajectory(
                int(row["task_id"]),
                str(row["task_name"]),
                int(row["variation"]),
                state.task_description,
                state,
                semantics,
            )
        else:
            traj.record(str(row["history"][-1]["action"]), "oracle", state)
        yield row, traj
