"""Every knowledge file ScienceWorld's package ships (``env/scienceworld/data`` and its task logic's
``procedures/data``: built
from ScienceWorld's gold paths) names, in
its provenance header, the variations it was built from, and they are all train variations: dev and
test are what the evaluation plays. (The packaged imitation model's episodes are checked in
tests/swift/test_data.py.)"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from fastslow.env.scienceworld.tasks import get_task

DATA = Path(str(resources.files("fastslow.env.scienceworld") / "data"))
PROCEDURES_DATA = Path(str(resources.files("fastslow.env.scienceworld.procedures") / "data"))
"""The hand-written task logic's knowledge files (``fastslow.env.scienceworld.procedures``)."""
KNOWLEDGE_FILES = ("circuits.json", "focus_budgets.json", "paints.json", "sage_demos.json", "substances.json")
ENV_FILES = ("sage_demos.json",)
"""The knowledge files in ``env/scienceworld/data``; the others are in ``procedures/data``."""


def _path(name: str) -> Path:
    return (DATA if name in ENV_FILES else PROCEDURES_DATA) / name


TASK_TABLE = "tasks.json"
"""Not a knowledge file: the split table itself (which variation is train, dev or test), written by
``fastslow data tasks``; its gold-path lengths of test variations group tasks in reports, and no agent
reads them."""


def provenance_faults(data: dict[str, Any]) -> list[str]:
    """What is wrong with a knowledge file's provenance: no train split, no variations per task, a task
    without variations, a variation that is not a train one, a header that does not say its command."""
    faults: list[str] = []
    if data.get("split") != "train":
        faults.append(f"split is {data.get('split')!r}, not 'train'")
    if not str(data.get("generated_by", "")).startswith("fastslow data "):
        faults.append("no generating command")
    if "commit" not in data:
        faults.append("no commit")
    variations = data.get("variations")
    if not isinstance(variations, dict) or not variations:
        return [*faults, "no variations listed"]
    if [int(task) for task in variations] != data.get("tasks"):
        faults.append(f"tasks {data.get('tasks')} are not the variations' tasks {list(variations)}")
    for task, chosen in variations.items():
        if not chosen:
            faults.append(f"task {task}: no variations listed")
        train = set(get_task(int(task)).variations["train"])
        faults += [f"task {task}: variation {v} is not a train variation" for v in chosen if v not in train]
    return faults


def test_every_packaged_data_file_is_a_knowledge_file_or_the_task_table() -> None:
    """A new data file must be classified here, so it cannot ship unchecked."""
    assert {p.name for p in DATA.iterdir() if p.is_file()} == {*ENV_FILES, TASK_TABLE}
    assert {p.name for p in PROCEDURES_DATA.iterdir() if p.is_file()} == set(KNOWLEDGE_FILES) - set(ENV_FILES)


@pytest.mark.parametrize("name", KNOWLEDGE_FILES)
def test_a_knowledge_file_names_only_train_variations(name: str) -> None:
    data = json.loads(_path(name).read_text(encoding="utf-8"))
    assert provenance_faults(data) == []


def test_the_demos_come_from_the_variations_their_header_names() -> None:
    data = json.loads((DATA / "sage_demos.json").read_text(encoding="utf-8"))
    shown = {task: [demo["variation"] for demo in demos] for task, demos in data["demos"].items()}
    assert shown == data["variations"]


def test_a_provenance_without_its_variations_or_with_a_test_one_fails() -> None:
    header = {"generated_by": "fastslow data paints", "commit": None, "split": "train", "tasks": [3]}
    assert provenance_faults(header) == ["no variations listed"]
    test_variation = get_task(3).variations["test"][0]
    faults = provenance_faults({**header, "variations": {"3": [0, test_variation]}})
    assert faults == [f"task 3: variation {test_variation} is not a train variation"]
    assert provenance_faults({**header, "split": "test", "variations": {"3": [0]}}) == [
        "split is 'test', not 'train'"
    ]


def test_the_builders_read_no_dev_or_test_gold_path() -> None:
    from fastslow.env.scienceworld.procedures.knowledge import _train_gold_paths

    for split in ("dev", "test"):
        variation = get_task(4).variations[split][0]
        with pytest.raises(ValueError, match=f"variations \\[{variation}\\] are not train variations"):
            next(_train_gold_paths({4: [0, variation]}, "easy", None))
