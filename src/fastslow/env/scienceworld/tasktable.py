"""``fastslow data tasks``: recompute the task table (variation splits, gold-path lengths) from ScienceWorld
(paper §4's episode set). Kept apart from ``tasks`` (which only reads the shipped table) because it
needs the adapter and the JVM.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastslow.env.scienceworld import tasks
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import TEST_EPISODES_PER_TASK


def build_task_table(progress: Any = None) -> dict[str, Any]:
    """Recompute the task table from ScienceWorld (loads every task; gold paths of the test set).

    This is what ``fastslow data tasks`` runs to regenerate ``data/tasks.json`` (``write_task_table``).
    """
    from scienceworld.constants import TASKS as SW_TASKS

    meta = {t["task_name"]: t for t in SW_TASKS}
    names = sorted(meta)
    rows: list[dict[str, Any]] = []
    with ScienceWorldAdapter(simplification="easy") as env:
        jvm = env._ensure_jvm()
        server = jvm.server
        for task_id, name in enumerate(names):
            server.load(name, 0, "easy", False)
            splits = {
                "train": [int(v) for v in server.getVariationsTrain()],
                "dev": [int(v) for v in server.getVariationsDev()],
                "test": [int(v) for v in server.getVariationsTest()],
            }
            lengths: dict[str, int] = {}
            for variation in splits["test"][:TEST_EPISODES_PER_TASK]:
                server.load(name, variation, "easy", True)
                lengths[str(variation)] = len(list(server.getGoldActionSequence()))
            rows.append(
                {
                    "task_id": task_id,
                    "name": name,
                    "swiftsage_id": meta[name]["task_id"],
                    "title": f"{meta[name]['topic']}: {meta[name]['task']}",
                    "n_variations": int(server.getTaskMaxVariations(name)),
                    "variations": splits,
                    "oracle_lengths": lengths,
                }
            )
            if progress is not None:
                progress(task_id, name)
    import scienceworld

    return {
        "generated_by": "fastslow data tasks",
        "scienceworld_version": scienceworld.__version__,
        "simplification": "easy",
        "tasks": rows,
    }


def write_task_table(out: Path | None, say: Callable[[str], None]) -> Path:
    """``World.rebuild_task_table``: ``build_task_table`` written as JSON to ``out`` (default: the
    packaged ``data/tasks.json`` that ``tasks`` reads), one ``say`` line per task loaded; the path
    written."""
    target = out or Path(tasks.__file__).parent / "data" / tasks.TASKS_FILE
    table = build_task_table(lambda i, name: say(f"task {i:2d} {name}"))
    target.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    return target
