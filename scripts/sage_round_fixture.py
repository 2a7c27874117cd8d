"""Write ``src/fastslow/models/data/sage_rounds.json``: Sage's prompts for two rounds of a real episode.

``fastslow bench llm`` times a Sage round (planning, then grounding) on these prompts (``models.bench``).
They are what Sage's own code renders (``Sage.messages``, ``Sage._ground_messages``) on a real state of
a fresh ScienceWorld JVM: boil (task 0), test variation 21, after the 18 actions of ``ROUND_1`` (the
state of ``tests/controller/fixtures``), and after one more action for the second round, in both prompt
profiles (``authors``: the paper configurations; ``fastslow``: the default). The planning reply the
grounding prompt quotes is the fixed ``PLAN``.

    python scripts/sage_round_fixture.py            # rewrite the file
    python scripts/sage_round_fixture.py --check    # exit 1 if the file differs from a fresh rendering
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fastslow.controller.config import SageRunConfig
from fastslow.controller.sage import PlanRequest, Sage
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld import ScienceWorldAdapter
from fastslow.env.tasks import get_task
from fastslow.env.valid import authors_failed
from fastslow.models.scripted import ScriptedModel

OUT = Path(__file__).resolve().parents[1] / "src" / "fastslow" / "models" / "data" / "sage_rounds.json"
TASK, VARIATION = 0, 21
ROUND_1 = [
    "teleport to kitchen",
    "pick up thermometer",
    "open cupboard",
    "pick up metal pot",
    "teleport to hallway",
    "look around",
    "teleport to kitchen",
    "move metal pot to sink",
    "activate sink",
    "deactivate sink",
    "pick up metal pot",
    "focus on substance in metal pot",
    "look around",
    "examine metal pot",
    "look around",
    "examine stove",
    "look around",
    "open table",
]
ROUND_2 = ["move metal pot to stove"]
INSTINCTS = ["move metal pot to stove", "activate stove"]
PLAN = "Question 1: You need water and a pot.\nQuestion 2: The pot is in the cupboard."
PROFILES = {
    "authors": SageRunConfig(prompt="authors", history_turns=15, parse_retries=0, max_failures=100),
    "fastslow": SageRunConfig(),
}


def render() -> dict[str, Any]:
    env = ScienceWorldAdapter(simplification="easy")
    try:
        first = env.reset(TASK, VARIATION)
        traj = Trajectory(TASK, get_task(TASK).name, VARIATION, first.task_description, first)
        failures = []
        rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in PROFILES}
        for actions, instinct in zip([ROUND_1, ROUND_2], INSTINCTS, strict=True):
            for action in actions:
                traj.record(action, "swift", env.step(action))
                if authors_failed(traj.turns[-1].observation):
                    failures.append(traj.turns[-1])
            request = PlanRequest(traj, traj.current.steps, list(failures), instinct=instinct)
            for name, cfg in PROFILES.items():
                sage = Sage(ScriptedModel(["unused"]), cfg)
                rounds[name].append(
                    {"plan": sage.messages(request), "ground": sage._ground_messages(request, PLAN)}
                )
    finally:
        env.close()
    return {
        "task": TASK,
        "variation": VARIATION,
        "steps": [len(ROUND_1), len(ROUND_1) + len(ROUND_2)],
        **rounds,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    text = json.dumps(render(), indent=1, ensure_ascii=False) + "\n"
    if parser.parse_args().check:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT}: {'up to date' if same else 'differs from a fresh rendering'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
