"""Imitation Swift features: action parsing, the feature matrix, the thermometer answer-box feature, the
evidence keys."""

from __future__ import annotations

import numpy as np

from fastslow.env.scienceworld.semantics import arguments, verb_of
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.swift.features import (
    DENSE,
    EVIDENCE_SLOTS,
    STATE_CONTEXT,
    STATE_SLOTS,
    ActionTable,
    SwiftState,
    dense_features,
    feature_index,
    linear_scores,
    object_state_keys,
)

TASK = (
    "Your task is to measure the melting point of chocolate. First, focus on the thermometer. "
    "If the melting point of chocolate is above 50.0 degrees celsius, focus on the blue box. "
    "If the melting point of chocolate is below 50.0 degrees celsius, focus on the orange box."
)
ACTIONS = ["focus on blue box", "focus on orange box", "open oven"]


def state(history: list[tuple[str, str, int]]) -> SwiftState:
    return SwiftState("measure-melting-point-known-substance", TASK, 0, "", "", history, [], ACTIONS)


def box_columns(st: SwiftState) -> list[tuple[float, float]]:
    table = ActionTable(SEMANTICS)
    x = dense_features(table, table.ids(ACTIONS), st)
    agree, unmeasured = DENSE.index("box_agrees"), DENSE.index("box_unmeasured")
    return [(float(r[agree]), float(r[unmeasured])) for r in x]


def test_parsing() -> None:
    assert verb_of("focus on red box") == "focus on"
    assert arguments("move metal pot to stove") == ["metal pot", "stove"]
    assert arguments("teleport to kitchen") == ["kitchen"]


def test_feature_matrix_shapes_and_overlap() -> None:
    actions = ["focus on water", "open oven", "teleport to kitchen"]
    st = SwiftState(
        "boil", "Your task is to boil water.", 0, "", "", [("open oven", "ok", 0)], ["kitchen"], actions
    )
    table = ActionTable(SEMANTICS)
    ids = table.ids(actions)
    x = dense_features(table, ids, st)
    assert x.shape == (3, len(DENSE))
    assert x[0, DENSE.index("in_task")] == 1.0 and x[1, DENSE.index("in_task")] == 0.0
    assert x[1, DENSE.index("last_action")] == 1.0
    assert x[2, DENSE.index("visited_room")] == 1.0
    idx, val = feature_index(table, ids, st)
    assert idx.shape == val.shape and idx.min() >= 0
    small, _ = feature_index(table, ids, st, buckets=1 << 16)
    assert small.max() < 1 << 16 and np.array_equal(small, idx & ((1 << 16) - 1))


def test_box_feature_reads_the_thermometer_against_the_threshold() -> None:
    # No reading yet: both boxes are unmeasured, other actions untouched.
    assert box_columns(state([])) == [(0.0, 1.0), (0.0, 1.0), (0.0, 0.0)]
    # A solid at 20 degrees proves nothing about a 50-degree threshold ...
    solid_low = [("use thermometer on chocolate", "the thermometer measures a temperature of 20 degrees", 0)]
    assert box_columns(state(solid_low))[0] == (0.0, 1.0)
    # ... a solid at 60 proves "above", and a liquid at 40 means "below".
    solid_high = [("use thermometer on chocolate", "the thermometer measures a temperature of 60 degrees", 0)]
    assert box_columns(state(solid_high))[:2] == [(1.0, 0.0), (-1.0, 0.0)]
    liquid = [
        ("use thermometer on liquid chocolate", "the thermometer measures a temperature of 40 degrees", 0)
    ]
    assert box_columns(state(liquid))[:2] == [(-1.0, 0.0), (1.0, 0.0)]


def test_task_template_keys_are_the_same_whatever_the_cache_holds() -> None:
    """A task description's template keys (``focus on <T>`` for chocolate's task) do not depend on
    which actions, in which order, the cache met before, nor on other descriptions in between."""
    other = "Your task is to boil water. First, focus on the water."
    actions = [*ACTIONS, "focus on chocolate", "focus on water", "move chocolate to oven", "wait 10"]
    fresh = ActionTable(SEMANTICS)
    ids = fresh.ids(actions)
    want = fresh.task_keys(ids, TASK)
    table = ActionTable(SEMANTICS)
    ids = table.ids(actions)
    for part in (ids[3:5], ids[::-1], ids[:2]):  # a few at a time, reversed, with another task between
        assert (table.task_keys(part, TASK) == want[[list(ids).index(i) for i in part]]).all()
        table.task_keys(ids, other)
    assert (table.task_keys(ids, TASK) == want).all()
    # a word the task names is <T>: "focus on chocolate" here is "focus on water" in the boiling task,
    # and neither is the other action under the same task
    chocolate, water = actions.index("focus on chocolate"), actions.index("focus on water")
    assert table.task_keys(ids[[water]], other)[0] == want[chocolate]
    assert table.task_keys(ids[[chocolate]], other)[0] != want[chocolate] != want[water]


def _evidence_block(st: SwiftState) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    table = ActionTable(SEMANTICS)
    ids = table.ids(ACTIONS)
    plain_idx, plain_val = feature_index(table, ids, st)
    idx, val = feature_index(table, ids, st, evidence=True)
    return plain_idx, plain_val, idx, val


def test_evidence_keys_sit_apart_and_only_on_the_alternatives_targets() -> None:
    """With ``evidence`` the matrix gains ``EVIDENCE_SLOTS`` columns and is otherwise the same (a model
    trained without them scores as before); only the candidates naming a conditional alternative's
    target (the boxes) have evidence, and it follows the reading against the threshold."""
    low = [("use thermometer on liquid chocolate", "the thermometer measures a temperature of 40 degrees", 0)]
    high = [
        ("use thermometer on liquid chocolate", "the thermometer measures a temperature of 60 degrees", 0)
    ]
    plain_idx, plain_val, idx, val = _evidence_block(state(low))
    k = plain_idx.shape[1] - 4 * len(DENSE)  # the sparse block, then the evidence block
    assert idx.shape[1] == plain_idx.shape[1] + EVIDENCE_SLOTS
    assert np.array_equal(idx[:, :k], plain_idx[:, :k]) and np.array_equal(
        idx[:, k + EVIDENCE_SLOTS :], plain_idx[:, k:]
    )
    assert np.array_equal(val[:, :k], plain_val[:, :k]) and np.array_equal(
        val[:, k + EVIDENCE_SLOTS :], plain_val[:, k:]
    )
    block = val[:, k : k + EVIDENCE_SLOTS]
    assert block[0].sum() > 0 and block[1].sum() > 0 and block[2].sum() == 0  # "open oven" names no box
    # The two boxes' keys differ (above / below tell them apart), and a reading on the other side of the
    # threshold changes both; "open oven" has none either way.
    _, _, idx_high, val_high = _evidence_block(state(high))
    ev, ev_high = idx[:, k : k + EVIDENCE_SLOTS], idx_high[:, k : k + EVIDENCE_SLOTS]
    assert set(ev[0][block[0] > 0]) != set(ev[1][block[1] > 0])
    for row in (0, 1):
        assert set(ev[row][block[row] > 0]) != set(ev_high[row][val_high[row, k : k + EVIDENCE_SLOTS] > 0])
    # A task without conditional alternatives has no evidence at all.
    boil = SwiftState("boil", "Your task is to boil water.", 0, "", "", [], [], ACTIONS)
    table = ActionTable(SEMANTICS)
    _, val_boil = feature_index(table, table.ids(ACTIONS), boil, evidence=True)
    assert val_boil[:, k : k + EVIDENCE_SLOTS].sum() == 0


def test_object_state_keys_follow_the_look_not_the_action() -> None:
    """Two valid actions that differ only in the pot get keys from what the look says each pot holds
    (seedling / reproducing); the block sits after the sparse and evidence blocks, is 0 for the other
    candidates, and ``linear_scores`` adds it as the matrix form does."""
    actions = [
        "focus on apricot tree in self watering flower pot 2",
        "focus on apricot tree in self watering flower pot 9",
        "open door to kitchen",
    ]

    def look(first: str, second: str) -> SwiftState:
        text = (
            "Here you see: \n\ta self watering flower pot 2 (containing a apricot tree in the "
            f"{first} stage, soil)\n\ta self watering flower pot 9 (containing a apricot tree in the "
            f"{second} stage, soil)"
        )
        task = (
            "Your task is to focus on the life stages of the apricot plant, starting from earliest to latest."
        )
        return SwiftState("identify-life-stages-2", task, 33, text, "", [], [], actions)

    table = ActionTable(SEMANTICS)
    ids = table.ids(actions)
    rows, keys = object_state_keys(table, ids, look("seedling", "reproducing"))
    assert rows.tolist() == [0, 1] and keys.shape == (2, STATE_SLOTS) and keys[0, 0] != keys[1, 0]
    swapped_rows, swapped = object_state_keys(table, ids, look("reproducing", "seedling"))
    assert swapped_rows.tolist() == [0, 1] and swapped[0, 0] == keys[1, 0] and swapped[1, 0] == keys[0, 0]
    st = look("seedling", "reproducing")
    plain_idx, _ = feature_index(table, ids, st, evidence=True)
    idx, val = feature_index(table, ids, st, evidence=True, states=True)
    k = plain_idx.shape[1] - 4 * len(DENSE)
    width = STATE_SLOTS * STATE_CONTEXT
    assert idx.shape[1] == plain_idx.shape[1] + width
    block = val[:, k : k + width]
    assert block[0].sum() == block[1].sum() == STATE_CONTEXT and block[2].sum() == 0  # one word each
    w = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    np.testing.assert_allclose(
        linear_scores(table, ids, st, w, evidence=True, states=True), (w[idx] * val).sum(axis=1), rtol=1e-5
    )
    # A look that describes pots none of the candidates names: an all-zero block.
    door = table.ids(actions[2:])
    idx, val = feature_index(table, door, st, evidence=True, states=True)
    assert not val[:, k : k + width].any()
