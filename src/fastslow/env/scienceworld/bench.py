"""ScienceWorld's answers to ``fastslow bench`` (``fastslow.env.bench``; paper §3.1 and §4).

``fastslow bench env``: our ScienceWorld adapter against the stock wrapper, side by side (paper §4). Both
environments replay the same gold paths in lockstep in one process. Every step's observation, score,
look, inventory and valid-action list must be identical; only the time spent in ``step`` differs. Both
JVMs run with the same ``hash_codes`` options (``fastslow.env.scienceworld.adapter.jvm_options``): the
stock wrapper's would otherwise order objects by the JVM's own hash codes. ``adapter_bench`` is what
``World.bench_env`` runs: the gold paths with no simplification (the headline), then with "easy".

``SAMPLE_TEXT``: ScienceWorld-shaped objects, verbs, observations and rooms for ``fastslow bench
memory``'s synthetic AMM records (``World.sample_text``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from unittest import mock

from fastslow.env.bench import AdapterBench, SampleText
from fastslow.env.episodes import parse_int_ranges
from fastslow.env.scienceworld.adapter import HashCodes, ScienceWorldAdapter, jvm_options
from fastslow.env.scienceworld.semantics import FOCUS, NO_MATCH, PICK_UP, ROOMS
from fastslow.env.scienceworld.tasks import get_task
from fastslow.errors import UsageError

if TYPE_CHECKING:
    from scienceworld import ScienceWorldEnv

#: boil, chemistry-mix, find-animal, identify-life-stages-1, lifespan-longest-lived, melt: 6-40 gold
#: steps each, and two JVMs replaying them agree exactly. (With hash_codes="default", in some electrical
#: and growing tasks two JVMs name ambiguous objects differently, so their valid-action lists differ
#: whatever the wrapper.)
DEFAULT_TASKS = (0, 2, 5, 12, 17, 22)


@dataclass
class BenchResult:
    steps: int
    valid_actions: int
    """Total valid actions over all steps (their mean is what the transfer cost scales with)."""
    stock_s: float
    ours_s: float
    mismatches: list[str]

    @property
    def stock_steps_per_s(self) -> float:
        return self.steps / self.stock_s

    @property
    def ours_steps_per_s(self) -> float:
        return self.steps / self.ours_s

    def headline(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "mean_valid_actions": round(self.valid_actions / self.steps),
            "stock_steps_per_s": round(self.stock_steps_per_s, 2),
            "ours_steps_per_s": round(self.ours_steps_per_s, 2),
            "ratio": round(self.ours_steps_per_s / self.stock_steps_per_s, 2),
            "identical": not self.mismatches,
        }


def stock_wrapper(hash_codes: HashCodes = "constant", step_limit: int = 10_000) -> ScienceWorldEnv:
    """The stock ``ScienceWorldEnv`` on a JVM started with our options for ``hash_codes`` (it passes
    none of its own), so that its texts can be compared with the adapter's."""
    import scienceworld.scienceworld as stock_module
    from py4j.java_gateway import launch_gateway
    from scienceworld import ScienceWorldEnv

    launch = functools.partial(launch_gateway, javaopts=jvm_options(hash_codes))
    with mock.patch.object(stock_module, "launch_gateway", launch):
        return ScienceWorldEnv("", envStepLimit=step_limit)


def bench_env(
    tasks: tuple[int, ...] = DEFAULT_TASKS,
    simplification: str = "easy",
    progress: Callable[[str], None] | None = None,
    hash_codes: HashCodes = "constant",
) -> BenchResult:
    stock = stock_wrapper(hash_codes)
    ours = ScienceWorldAdapter(simplification=simplification, hash_codes=hash_codes)
    steps, n_valid, stock_s, ours_s = 0, 0, 0.0, 0.0
    mismatches: list[str] = []
    try:
        for task_id in tasks:
            info = get_task(task_id)
            variation = info.variations["train"][0]
            first = ours.reset(task_id, variation, gold=True)
            stock.load(info.name, variation, simplification, generateGoldPath=False)
            stock_obs, stock_info = stock.reset()
            if (stock_obs, stock_info["valid"]) != (first.observation, list(first.valid_actions)):
                mismatches.append(f"task {task_id} var {variation}: reset differs")
            for i, action in enumerate(ours.gold_actions, start=1):
                t0 = time.perf_counter()
                obs, _, _, inf = stock.step(action)
                t1 = time.perf_counter()
                res = ours.step(action)
                t2 = time.perf_counter()
                stock_s += t1 - t0
                ours_s += t2 - t1
                steps += 1
                n_valid += len(res.valid_actions)
                same = (
                    obs == res.observation
                    and inf["score"] == res.score
                    and inf["valid"] == list(res.valid_actions)
                    and inf["look"] == res.look
                    and inf["inv"] == res.inventory
                )
                if not same:
                    mismatches.append(f"task {task_id} var {variation} step {i} ({action!r}) differs")
            if progress:
                progress(f"task {task_id:2d} {info.name}: {len(ours.gold_actions)} steps, score {res.score}")
    finally:
        ours.close()
        stock.close()
    return BenchResult(steps, n_valid, stock_s, ours_s, mismatches)


def adapter_bench(tasks: str | None, steps: int | None, say: Callable[[str], None]) -> AdapterBench:
    """``World.bench_env``: ``bench_env`` on ``tasks`` (ids and ranges, ``DEFAULT_TASKS`` when None) with
    no simplification (the full action space, ~2,000-2,900 valid actions per step, where the stock
    wrapper's per-element copy dominates: the headline), then with "easy" (the paper's setting, ~800
    valid actions, where the JVM's own enumeration is a larger share of each step). Whole gold paths
    are replayed, so ``steps`` is refused."""
    if steps is not None:
        raise UsageError("--steps: bench env on ScienceWorld replays whole gold paths (--tasks chooses them)")
    task_ids = tuple(parse_int_ranges(tasks, "task")) if tasks else DEFAULT_TASKS
    heads = {}
    mismatches: list[str] = []
    for simplification in ("", "easy"):
        label = simplification or "none"
        say(f"simplification: {label}")
        result = bench_env(task_ids, simplification, progress=lambda line: say("  " + line))
        mismatches += [f"[{label}] {m}" for m in result.mismatches]
        head = heads[label] = result.headline()
        say(
            f"  {head['steps']} steps, {head['mean_valid_actions']} valid actions/step: "
            f"stock {head['stock_steps_per_s']} steps/s, ours {head['ours_steps_per_s']} steps/s, "
            f"ratio {head['ratio']}x, identical={head['identical']}"
        )
    return AdapterBench({**heads["none"], "simplification": "none", "easy": heads["easy"]}, tuple(mismatches))


_OBJECTS = (
    "thermometer", "metal pot", "stove", "sink", "freezer", "fridge", "cup", "glass jar", "red box",
    "blue box", "orange box", "flower pot", "seed jar", "apple seed", "banana tree", "ice cube", "water",
    "sodium chloride", "paint", "red paint", "blue paint", "yellow paint", "wood cup", "battery", "wire",
    "light bulb", "switch", "solar panel", "inclined plane", "block", "stopwatch", "lighter", "oven",
    "blast furnace", "chocolate", "marshmallow", "soap", "dove", "beaver", "frog egg", "butterfly",
    "axe", "bee hive", "shovel", "soil", "recipe", "book", "door", "painting", "table",
)  # fmt: skip

SAMPLE_TEXT = SampleText(
    objects=_OBJECTS,
    verbs=(PICK_UP, "open", "move", FOCUS, "activate", "pour", "mix", "look at", "use", "read"),
    observations=(
        "You move the {o} to the inventory.",
        "The {o} is now open.",
        "You focus on the {o}.",
        "The {o} is now activated.",
        "You pour the {o} into the {p}.",
        "Chemicals mixed; the {o} now contains {p}.",
        "a {o}, which is at a temperature of 22 degrees celsius",
        NO_MATCH,
        "You move the {o} to the {p}.",
    ),
    rooms=ROOMS,
    recent_move="go to {room} -> You move to the {other}.",
    task_description=(
        "Your task is to {task} the {o}. First, focus on the {o}. Then, move it to the {p} in the {room}."
    ),
)
"""ScienceWorld's ``World.sample_text``: real rooms and verbs, objects of its tasks, typical observation
sentences (the memory benchmark's records, paper §3.1)."""
