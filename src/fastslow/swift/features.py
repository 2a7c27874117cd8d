"""Features of the embedded imitation Swift (paper §3, SwiftSage's Swift, re-implemented for CPU).

Swift scores every valid action a in state s as ``w · phi(s, a)``, with two kinds of features:

- hashed crosses of *context keys* (task; task x score; task x last action; task x room; ...) with
  *candidate keys* (the action string, its verb, its words, its arguments). They memorise what the
  gold path does next in a state like this one.
- dense features that generalise to objects never seen in training: how much of the candidate is named
  in the task description, the last observation or the inventory; whether it was done before; whether a
  retrieved memory (AMM hint) did it. Each dense feature gets a global weight and per-task, per-verb and
  per-task-verb weights.

Candidate keys depend only on the action string, so they are hashed once and cached in an
``ActionTable``; a decision over ~3,000 valid actions is then a few numpy gathers (``fastslow bench
swift``). Hashes use CRC32, so they are stable across processes and Python versions.

Verbs, arguments, argument joiners, navigation and rooms are the world's (the ``WorldSemantics`` an
``ActionTable`` is made with: the episode's ``Trajectory.semantics``, or the training data's world);
stopwords are ``core.semantics.FUNCTION_WORDS``. The packaged weights were trained with exactly these,
so a change there changes every hashed feature. The conditional-alternative, reading, device and
object-state features read the world's ``WorldEvidence`` (ScienceWorld's judgement tasks and container
listings) and are 0 in a world that offers none.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from fastslow.core.semantics import FUNCTION_WORDS, Alternative, WorldEvidence, WorldSemantics
from fastslow.core.trajectory import Trajectory
from fastslow.swift.answer_box import box_features

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]

N_BUCKETS = 1 << 20
"""Default size of the hashed weight vector (4 MB as float32); a weights file's own length is its
size (a power of two: indices are masked)."""
CAND_SLOTS = 12
TASK_CACHE_SIZE = 8192
"""Task descriptions whose template keys are kept (all train variations have 3,592; an episode, one)."""
WORD_SLOTS = 8
_WORD = re.compile(r"[a-z0-9]+")
_MIX1 = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xC2B2AE3D27D4EB4F)

DENSE = (
    "bias",
    "done_before",
    "last_action",
    "recent_count",
    "in_task",
    "in_observation",
    "in_inventory",
    "visited_room",
    "mem_success",
    "mem_near_miss",
    "mem_avoid",
    "mem_overlap",
    "box_agrees",
    "box_unmeasured",
)
"""Dense features, in column order."""


def h(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in FUNCTION_WORDS]


def _template(semantics: WorldSemantics, action: str) -> str:
    """Verb plus argument arity, e.g. 'move _ to _': generalises an action across objects."""
    verb = semantics.verb_of(action)
    args = semantics.arguments(action)
    rest = action[len(verb) :]
    for prep in semantics.argument_joiners:
        if prep in rest:
            return f"{verb} _{prep}_"
    return verb + (" _" if args else "")


def candidate_keys(semantics: WorldSemantics, action: str) -> list[int]:
    """The action's hashed candidate keys: itself, its verb, its template, its objects, its words."""
    verb = semantics.verb_of(action)
    keys = [h("A:" + action), h("V:" + verb), h("T:" + _template(semantics, action))]
    for i, arg in enumerate(semantics.arguments(action)[:2]):
        keys.append(h(f"O{i}:{arg}"))
        keys.append(h(f"VO{i}:{verb}|{arg}"))
    for w in words(action[len(verb) :])[:5]:
        keys.append(h(f"VW:{verb}|{w}"))
    return keys[:CAND_SLOTS]


def sorted_lookup(keys: IntArray, ids: IntArray) -> tuple[IntArray, npt.NDArray[np.bool_]]:
    """For each of ``ids``, its position in the ascending ``keys`` and whether it is there (a position
    is only meaningful where it is). A lookup without an array over the whole action table, which holds
    hundreds of thousands of strings in training."""
    if not len(keys):
        return np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=bool)
    at = np.minimum(np.searchsorted(keys, ids), len(keys) - 1)
    return at, keys[at] == ids


class _TaskKeys:
    """Task-template keys of one task description: the action ids computed so far, ascending, their
    keys and the conditional alternative each one names (-1: none). Sparse, so that a training run keeps
    one per task description of the data (thousands) at the cost of the actions each one's episodes
    offer, not of the whole table."""

    def __init__(self) -> None:
        self.ids = np.empty(0, dtype=np.int64)
        self.keys = np.empty(0, dtype=np.int64)
        self.alternative = np.empty(0, dtype=np.int64)

    def add(self, ids: IntArray, keys: IntArray, alternative: IntArray) -> None:
        """Add the keys and alternatives of ``ids`` (distinct, none present yet)."""
        merged = np.concatenate([self.ids, ids])
        order = np.argsort(merged, kind="stable")
        self.ids = merged[order]
        self.keys = np.concatenate([self.keys, keys])[order]
        self.alternative = np.concatenate([self.alternative, alternative])[order]


class ActionTable:
    """Cache of per-action hashed keys, grown as new action strings appear; the keys are read with
    ``semantics`` (its world's verbs and objects)."""

    def __init__(self, semantics: WorldSemantics) -> None:
        self.semantics = semantics
        self._ids: dict[str, int] = {}
        self.keys = np.zeros((1024, CAND_SLOTS), dtype=np.uint64)
        self.key_mask = np.zeros((1024, CAND_SLOTS), dtype=np.float32)
        self.mixed = np.zeros((1024, CAND_SLOTS), dtype=np.int64)
        """Candidate keys pre-multiplied by the hash mixer (saves the multiply per decision)."""
        self.words = np.full((1024, WORD_SLOTS), -1, dtype=np.int64)
        self.word_ids = np.zeros((1024, WORD_SLOTS), dtype=np.int32)
        """The same words as ids in ``vocabulary`` (0: an empty slot), for overlap lookups."""
        self.vocabulary: dict[int, int] = {}
        """Word hash -> word id (from 1), for every word of an action in the table."""
        self.word_n = np.zeros(1024, dtype=np.float32)
        self.verb = np.zeros(1024, dtype=np.uint64)
        self.is_teleport = np.zeros(1024, dtype=bool)
        self.rest_key = np.zeros(1024, dtype=np.int64)
        """Hash of the normalized text after the verb ("apricot tree in self watering flower pot 9"),
        matched against ``WorldEvidence.described_contents`` by the object-state keys."""
        self.strings: list[str] = []
        self._task_cache: dict[str, _TaskKeys] = {}

    def _grow(self) -> None:
        n = len(self.keys) * 2
        self.keys = np.resize(self.keys, (n, CAND_SLOTS))
        self.key_mask = np.resize(self.key_mask, (n, CAND_SLOTS))
        self.mixed = np.resize(self.mixed, (n, CAND_SLOTS))
        self.words = np.resize(self.words, (n, WORD_SLOTS))
        self.word_ids = np.resize(self.word_ids, (n, WORD_SLOTS))
        self.word_n = np.resize(self.word_n, n)
        self.verb = np.resize(self.verb, n)
        self.is_teleport = np.resize(self.is_teleport, n)
        self.rest_key = np.resize(self.rest_key, n)

    def _add(self, action: str) -> int:
        return self._add_many([action])[0]

    def _add_many(self, actions: Sequence[str]) -> list[int]:
        """Add new action strings, their rows written in bulk (one numpy write per array, not per
        action: a new episode brings a few hundred actions the table has not seen)."""
        start = len(self.strings)
        end = start + len(actions)
        while end > len(self.keys):
            self._grow()
        keys = np.zeros((len(actions), CAND_SLOTS), dtype=np.uint64)
        mask = np.zeros((len(actions), CAND_SLOTS), dtype=np.float32)
        word_rows = np.full((len(actions), WORD_SLOTS), -1, dtype=np.int64)
        word_ids = np.zeros((len(actions), WORD_SLOTS), dtype=np.int32)
        vocabulary = self.vocabulary
        word_n = np.zeros(len(actions), dtype=np.float32)
        verbs = np.zeros(len(actions), dtype=np.uint64)
        teleport = np.zeros(len(actions), dtype=bool)
        rest = np.zeros(len(actions), dtype=np.int64)
        semantics = self.semantics
        for j, action in enumerate(actions):
            ks = candidate_keys(semantics, action)
            keys[j, : len(ks)] = ks
            mask[j, : len(ks)] = 1
            verb = semantics.verb_of(action)
            ws = [h(w) for w in words(action[len(verb) :])[:WORD_SLOTS]]
            word_rows[j, : len(ws)] = ws
            word_ids[j, : len(ws)] = [vocabulary.setdefault(w, len(vocabulary) + 1) for w in ws]
            word_n[j] = len(ws)
            verbs[j] = h(verb)
            teleport[j] = verb in semantics.navigation_verbs
            rest[j] = h("R:" + semantics.normalize(action[len(verb) :]))
        self.keys[start:end] = keys
        self.key_mask[start:end] = mask
        with np.errstate(over="ignore"):
            self.mixed[start:end] = (keys * _MIX1).view(np.int64)
        self.words[start:end] = word_rows
        self.word_ids[start:end] = word_ids
        self.word_n[start:end] = word_n
        self.verb[start:end] = verbs
        self.is_teleport[start:end] = teleport
        self.rest_key[start:end] = rest
        ids = list(range(start, end))
        for i, action in zip(ids, actions, strict=True):
            self._ids[action] = i
        self.strings.extend(actions)
        return ids

    def _task_rows(self, ids: IntArray, task_description: str) -> tuple[_TaskKeys, IntArray]:
        """The task description's cache, filled for ``ids``, and each id's position in it."""
        cache = self._task_cache.get(task_description)
        if cache is None:
            if len(self._task_cache) >= TASK_CACHE_SIZE:
                self._task_cache.clear()
            cache = self._task_cache[task_description] = _TaskKeys()
        at, found = sorted_lookup(cache.ids, ids)
        if not found.all():
            missing = np.unique(ids[~found])
            named = set(words(task_description))
            targets = [f" {a.target}" for a in _alternatives(self.semantics.evidence, task_description)]
            strings = self.strings
            fresh = np.empty(len(missing), dtype=np.uint64)
            alternative = np.full(len(missing), -1, dtype=np.int64)
            for j, i in enumerate(missing.tolist()):
                toks = ["<T>" if t in named else "#" if t.isdigit() else t for t in strings[i].split()]
                fresh[j] = h("AT:" + " ".join(toks))
                for k, target in enumerate(targets):
                    if target in f" {strings[i]}":
                        alternative[j] = k
                        break
            with np.errstate(over="ignore"):
                cache.add(missing, (fresh * _MIX1).view(np.int64), alternative)
            at, _ = sorted_lookup(cache.ids, ids)
        return cache, at

    def task_keys(self, ids: IntArray, task_description: str) -> IntArray:
        """Per candidate, the pre-mixed key of its *task template*: the action with every word the
        task description names replaced by <T> and numbers by #, e.g. ``focus on <T>``. It carries a
        gold path over to objects never seen in training (lead instead of water). Cached per task
        description, so a decision only computes it for actions new to the episode."""
        cache, at = self._task_rows(ids, task_description)
        out: IntArray = cache.keys[at]
        return out

    def task_alternatives(self, ids: IntArray, task_description: str) -> IntArray:
        """Per candidate, the index of the description's conditional alternative whose target it names
        (``WorldEvidence.alternatives``: "move foil to red box" names "red box"), -1 for
        none. Cached with the task-template keys."""
        cache, at = self._task_rows(ids, task_description)
        out: IntArray = cache.alternative[at]
        return out

    def known(self, action: str) -> int | None:
        return self._ids.get(action)

    def ids(self, actions: Sequence[str]) -> IntArray:
        out = list(map(self._ids.get, actions))
        if None in out:
            new = list(dict.fromkeys(a for a, i in zip(actions, out, strict=True) if i is None))
            self._add_many(new)
            out = list(map(self._ids.get, actions))
        return np.asarray(out, dtype=np.int64)


@dataclass
class SwiftState:
    """What Swift reads (SwiftSage's input), from a live Trajectory or a dataset row."""

    task_name: str
    task_description: str
    score: int
    look: str
    inventory: str
    history: list[tuple[str, str, int]]
    """(action, observation, reward), oldest first."""
    visited_rooms: list[str]
    valid_actions: Sequence[str]
    memories: list[tuple[str, str, str]] = field(default_factory=list)
    """(action, observation, tag) of retrieved memories."""

    @classmethod
    def from_trajectory(cls, traj: Trajectory) -> SwiftState:
        cur = traj.current
        return cls(
            traj.task_name,
            traj.task_description,
            cur.score,
            cur.look,
            cur.inventory,
            [(t.action, t.observation, t.reward) for t in traj.turns],
            list(traj.visited_rooms),
            cur.valid_actions,
        )

    @classmethod
    def from_row(cls, row: dict[str, object]) -> SwiftState:
        hist = row["history"]
        assert isinstance(hist, list)
        return cls(
            str(row["task_name"]),
            str(row["task_description"]),
            int(str(row["score"])),
            str(row["look"]),
            str(row["inventory"]),
            [(str(t["action"]), str(t["observation"]), int(t["reward"])) for t in hist],
            [str(r) for r in row["visited_rooms"]],  # type: ignore[attr-defined]
            [str(a) for a in row["valid_actions"]],  # type: ignore[attr-defined]
        )


def context_keys(semantics: WorldSemantics, state: SwiftState) -> list[int]:
    task = state.task_name
    last = state.history[-1][0] if state.history else "<start>"
    prev = state.history[-2][0] if len(state.history) > 1 else "<start>"
    room = semantics.location(state.look)
    return [
        h("bias"),
        h("t:" + task),
        h(f"ts:{task}|{state.score}"),
        h(f"tl:{task}|{last}"),
        h(f"tlv:{task}|{semantics.verb_of(last)}"),
        h(f"tll:{task}|{prev}|{last}"),
        h(f"tr:{task}|{room}"),
        h(f"trs:{task}|{room}|{state.score}"),
    ]


def _overlap(
    table: ActionTable, word_ids: npt.NDArray[np.int32], word_n: FloatArray, text: str
) -> FloatArray:
    """Per candidate (``word_ids``, ``word_n``: its rows of the table), the share of its argument words
    that ``text`` contains."""
    present = np.zeros(len(table.vocabulary) + 1, dtype=np.float32)
    vocabulary = table.vocabulary
    present[[i for w in set(words(text)) if (i := vocabulary.get(h(w)))]] = 1.0
    hits = np.take(present, word_ids) @ _ONES  # counts of small integers: exact in float32
    out: FloatArray = hits / word_n
    return out


_ONES = np.ones(WORD_SLOTS, dtype=np.float32)


def _per_action(table: ActionTable, ids: IntArray, weights: dict[str, float]) -> FloatArray:
    """A value per candidate from a small {action: value} map, without a Python loop over candidates."""
    out: FloatArray = np.zeros(len(ids), dtype=np.float32)
    known = {i: value for action, value in weights.items() if (i := table.known(action)) is not None}
    if not known:
        return out
    keys = np.fromiter(known, dtype=np.int64, count=len(known))
    order = np.argsort(keys)
    values = np.fromiter(known.values(), dtype=np.float32, count=len(known))[order]
    at, hit = sorted_lookup(keys[order], ids)
    out[hit] = values[at[hit]]
    return out


def dense_features(table: ActionTable, ids: IntArray, state: SwiftState, box: bool = True) -> FloatArray:
    """The (n_candidates, len(DENSE)) matrix of dense features. ``box``: fill the answer-box columns
    (``answer_box.box_features``, hand-written task logic); False leaves them 0."""
    n = len(ids)
    x = np.zeros((n, len(DENSE)), dtype=np.float32)
    x[:, 0] = 1.0
    counts: dict[str, float] = {}
    recent: dict[str, float] = {}
    for i, (action, _, _) in enumerate(state.history):
        counts[action] = min(counts.get(action, 0) + 1, 3)
        if i >= len(state.history) - 10:
            recent[action] = recent.get(action, 0) + 1
    if counts:
        x[:, 1] = _per_action(table, ids, counts)
        x[:, 3] = _per_action(table, ids, recent)
        x[:, 2] = _per_action(table, ids, {state.history[-1][0]: 1.0})
    word_ids, word_n = table.word_ids[ids], np.maximum(table.word_n[ids], 1.0)
    x[:, 4] = _overlap(table, word_ids, word_n, state.task_description)
    x[:, 5] = _overlap(table, word_ids, word_n, state.history[-1][1] if state.history else state.look)
    x[:, 6] = _overlap(table, word_ids, word_n, state.inventory)
    visited = {a: 1.0 for r in state.visited_rooms for a in table.semantics.go_to(r)}
    x[:, 7] = _per_action(table, ids, visited)
    if state.memories:
        for col, tag in ((8, "success"), (9, "near-miss"), (10, "avoidance")):
            x[:, col] = _per_action(table, ids, {a: 1.0 for a, _, t in state.memories if t == tag})
        good = " ".join(a for a, _, t in state.memories if t != "avoidance")
        if good:
            x[:, 11] = _overlap(table, word_ids, word_n, good)
    if box:
        box_features(table, ids, state, x)
    return x


EVIDENCE_SLOTS = 12
"""Evidence keys per candidate (``evidence_keys``)."""


def _alternatives(evidence: WorldEvidence | None, task_description: str) -> tuple[Alternative, ...]:
    return evidence.alternatives(task_description) if evidence is not None else ()


@lru_cache(maxsize=256)
def _telling_words(alternatives: tuple[Alternative, ...]) -> tuple[tuple[str, ...], ...]:
    """Per conditional alternative, the words of its condition that no other alternative's condition
    has ("above" / "below", "conductive" / "nonconductive", "dominant" / "recessive")."""
    conditions = [set(words(a.condition)) for a in alternatives]
    out = []
    for k, own in enumerate(conditions):
        others = set().union(*(c for j, c in enumerate(conditions) if j != k))
        out.append(tuple(sorted(own - others)))
    return tuple(out)


def _last_reading(evidence: WorldEvidence, state: SwiftState) -> tuple[float, str] | None:
    """The latest instrument reading of the history and the state of matter its action named
    ("use thermometer on liquid tin" -> "liquid"; "" when it named none)."""
    for action, observation, _ in reversed(state.history):
        reading = evidence.reading(observation)
        if reading is not None:
            named = set(action.split())
            return reading, next((m for m in evidence.states_of_matter if m in named), "")
    return None


def _evidence(
    evidence: WorldEvidence, state: SwiftState, alternative: Alternative, reading: tuple[float, str] | None
) -> list[str]:
    """What the agent has observed that may bear on a conditional alternative: the latest thermometer
    reading against the number the condition names (greater or less, and the state of matter measured),
    the states of the room's devices (a light bulb that is on), and a constant."""
    tokens = []
    if alternative.number is not None:
        if reading is None:
            tokens.append("num:none")
        else:
            side = "gt" if reading[0] > alternative.number else "lt"
            tokens += [f"num:{side}", f"num:{side}:{reading[1]}"]
    tokens += [f"dev:{s}" for s in sorted(evidence.device_states(state.look))]
    tokens.append("any")
    return tokens


def evidence_keys(evidence: WorldEvidence | None, state: SwiftState) -> tuple[IntArray, FloatArray]:
    """Per conditional alternative of the task (and a last row for "none"), ``EVIDENCE_SLOTS`` pre-mixed
    keys crossing each word that tells its condition apart (``_telling_words``) with each piece of
    evidence (``_evidence``), and their mask. Judgement tasks end at -100 when Swift picks the wrong box
    (docs/swift.md 2g); a linear model over action words cannot see which box the observations favour.
    These keys let it learn that from the gold paths: the weight of ("conductive", "dev:on") or
    ("above", "num:gt:liquid") is fitted, not written; what is written is how ScienceWorld words a
    condition, a reading and a device's state (the world's ``WorldEvidence``; none: one "none" row)."""
    alternatives = _alternatives(evidence, state.task_description)
    keys = np.zeros((len(alternatives) + 1, EVIDENCE_SLOTS), dtype=np.uint64)
    mask = np.zeros((len(alternatives) + 1, EVIDENCE_SLOTS), dtype=np.float32)
    if evidence is not None and alternatives:
        reading = _last_reading(evidence, state)
        telling = _telling_words(alternatives)
        for k, alternative in enumerate(alternatives):
            tokens = _evidence(evidence, state, alternative, reading)
            pairs = [h(f"EV:{w}|{t}") for t in tokens for w in telling[k]][:EVIDENCE_SLOTS]
            keys[k, : len(pairs)] = pairs
            mask[k, : len(pairs)] = 1.0
    with np.errstate(over="ignore"):
        mixed: IntArray = (keys * _MIX1).view(np.int64)
    return mixed, mask


STATE_SLOTS = 3
"""Object-state keys per candidate (``object_state_keys``)."""
STATE_CONTEXT = 3
"""The context keys (``context_keys``, in order) an object-state key is crossed with: the bias, the task,
and the task with the score (which stage comes next)."""


def object_state_keys(table: ActionTable, ids: IntArray, state: SwiftState) -> tuple[IntArray, IntArray]:
    """The candidates whose object the look or inventory describes beyond its name, and their
    (m, STATE_SLOTS) pre-mixed keys, 0 where unused: one per describing word
    (``WorldEvidence.described_contents``: the "apricot tree in self watering flower pot 9" of an action
    is the apricot tree "in the seedling stage"). The valid action never names a plant's stage, and which
    stage to focus on next is what identify-life-stages is about (docs/swift.md 2h); with these keys,
    crossed with the verb and the task and score, the model can learn it from gold paths. Written
    here: how ScienceWorld lists a container's contents; fitted: what any describing word is worth."""
    evidence = table.semantics.evidence
    described = evidence.described_contents(f"{state.look}\n{state.inventory}") if evidence else {}
    if not described:
        return np.empty(0, dtype=np.int64), np.empty((0, STATE_SLOTS), dtype=np.int64)
    names = list(described)
    hashes = np.asarray([h("R:" + name) for name in names], dtype=np.int64)
    order = np.argsort(hashes)
    at, hit = sorted_lookup(hashes[order], table.rest_key[ids])
    rows = np.flatnonzero(hit)
    keys = np.zeros((len(rows), STATE_SLOTS), dtype=np.uint64)
    for j, k in enumerate(order[at[rows]].tolist()):
        found = [h("OS:" + w) for w in described[names[k]][:STATE_SLOTS]]
        keys[j, : len(found)] = found
    with np.errstate(over="ignore"):
        mixed: IntArray = (keys * _MIX1).view(np.int64)
    return rows, mixed


def _state_block(
    table: ActionTable, ids: IntArray, state: SwiftState, verb: IntArray, ctx: IntArray
) -> tuple[IntArray, IntArray, FloatArray]:
    """The object-state block of the candidates that have one: their rows, and (m, STATE_SLOTS *
    STATE_CONTEXT) keys (key x verb x context) and 0/1 values."""
    rows, keys = object_state_keys(table, ids, state)
    crossed = keys[:, :, None] ^ verb[rows, None, None] ^ ctx[None, None, :STATE_CONTEXT]
    values = np.repeat((keys != 0).astype(np.float32), STATE_CONTEXT, axis=1)
    return rows, crossed.reshape(len(rows), STATE_SLOTS * STATE_CONTEXT), values


_DENSE_BASE = ((np.arange(len(DENSE), dtype=np.uint64) + np.uint64(1)) * _MIX1).view(np.int64)


class ContextSums:
    """Per context key, each action's sparse-block sum with it: ``sum_j mask_j * w[cand_j ^ ctx]`` over
    the action's candidate keys, by table id (NaN: not computed yet).

    An action's candidate keys are fixed within one task description (its table keys and its task
    template), so for a context key that recurs (the bias and the task, always; the task with the room
    or the score, while they stand; the last action's verb, often) its sum does not change from one
    decision to the next. A decision then gathers weights only for the context keys and actions it has
    not met in this episode: the context keys that change each step (the last action, the last two) and
    the actions new to it. The sums are dropped when the task description or the weight vector changes,
    and at most ``limit`` context keys are kept (the least recently used go first). The weights must
    not be written in place while a scorer holds sums of them."""

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self.values: FloatArray = np.full((limit, 1024), np.nan, dtype=np.float32)
        """(limit, table size) sums, one row per context key in ``_rows``."""
        self._weights: FloatArray | None = None
        """The weight vector the sums are of, held so that its id cannot pass to another array."""
        self._task = ""
        self._rows: dict[int, int] = {}
        """Context key -> its row of ``values``, least recently used first."""

    def rows(self, w: FloatArray, task_description: str, ctx: Sequence[int], size: int) -> IntArray:
        """The rows of ``values`` that hold the sums of each of ``ctx``, ``values`` at least ``size``
        wide (the table's length)."""
        if len(ctx) > self.limit:  # a key assigned in this call would be evicted by a later one
            raise ValueError(f"{len(ctx)} context keys need a limit of at least {len(ctx)}, not {self.limit}")
        if w is not self._weights or task_description != self._task:
            self._weights, self._task, self._rows = w, task_description, {}
        if self.values.shape[1] < size:
            grown = np.full((self.limit, max(size, 2 * self.values.shape[1])), np.nan, dtype=np.float32)
            grown[:, : self.values.shape[1]] = self.values
            self.values = grown
        out = []
        for key in ctx:
            row = self._rows.pop(key, None)  # re-inserted below: the dict's order is the recency
            if row is None:
                if len(self._rows) < self.limit:  # rows fill in order and stay full until a reset
                    row = len(self._rows)
                else:
                    row = self._rows.pop(next(iter(self._rows)))
                self.values[row] = np.nan
            self._rows[key] = row
            out.append(row)
        return np.asarray(out, dtype=np.int64)


class Scratch:
    """Arrays a scorer reuses from one decision to the next. When the allocator maps a fresh multi-MB
    numpy array from the kernel, its pages are zero-filled on first touch, and at 3,000 valid actions
    that cost more than the hashing and the gathers (a profile of ``score_state``, docs/swift.md 2b).
    A view it hands out is valid until the next ``take`` of the same name."""

    def __init__(self) -> None:
        self._arrays: dict[str, npt.NDArray[np.generic]] = {}
        self.sums = ContextSums()

    def take(self, name: str, shape: tuple[int, int], dtype: type[np.generic]) -> npt.NDArray[Any]:
        size = shape[0] * shape[1]
        buf = self._arrays.get(name)
        if buf is None or buf.size < size or buf.dtype != dtype:
            buf = self._arrays[name] = np.empty(size, dtype=dtype)
        return buf[:size].reshape(shape)


def _context_keys(table: ActionTable, state: SwiftState) -> IntArray:
    """The state's pre-mixed context keys; a sparse feature's key is a candidate key XOR one of them."""
    with np.errstate(over="ignore"):
        keys = context_keys(table.semantics, state)
        ctx: IntArray = (np.asarray(keys, dtype=np.uint64) * _MIX2).view(np.int64)
    return ctx


def _sparse_keys(table: ActionTable, ids: IntArray, state: SwiftState) -> tuple[IntArray, FloatArray]:
    """The sparse block's candidate side: per candidate its (n, CAND_SLOTS + 1) pre-mixed keys (the
    template keys, then the task-template key) and their 0/1 mask."""
    n, slots = len(ids), CAND_SLOTS + 1
    cand = np.empty((n, slots), dtype=np.int64)
    cand[:, :CAND_SLOTS] = table.mixed[ids]
    cand[:, CAND_SLOTS] = table.task_keys(ids, state.task_description)
    mask = np.ones((n, slots), dtype=np.float32)
    mask[:, :CAND_SLOTS] = table.key_mask[ids]
    return cand, mask


def _fill_sums(
    ids: IntArray,
    cand: IntArray,
    mask: FloatArray,
    values: FloatArray,
    rows: IntArray,
    ctx: IntArray,
    w: FloatArray,
    arrays: Scratch,
) -> None:
    """Write into ``values[rows[i], ids]`` the sparse sums of ``ids`` (their candidate keys ``cand``
    and mask ``mask``) with the context key ``ctx[i]``. Slot-major, so that every pass runs over long
    contiguous rows (numpy reduces a short inner axis several times slower than it adds rows); an
    action's sum is the same sequence of additions whichever other actions are computed with it."""
    n, slots = cand.shape
    cand_t = np.ascontiguousarray(cand.T)
    mask_t = np.ascontiguousarray(mask.T)
    idx = arrays.take("index", (slots, n), np.int64)
    gathered = arrays.take("gathered", (slots, n), np.float32)
    low = len(w) - 1
    for row, key in zip(rows.tolist(), ctx.tolist(), strict=True):
        np.bitwise_xor(cand_t, key, out=idx)
        np.bitwise_and(idx, low, out=idx)
        np.take(w, idx, out=gathered)
        gathered *= mask_t
        values[row, ids] = gathered.sum(axis=0)


def _verb_and_task(table: ActionTable, ids: IntArray, state: SwiftState) -> tuple[IntArray, int]:
    """Each candidate's pre-mixed verb key and the state's pre-mixed task key."""
    with np.errstate(over="ignore"):
        task = int((np.uint64(h("t:" + state.task_name)) * _MIX2).view(np.int64))
        verb: IntArray = (table.verb[ids] * _MIX2).view(np.int64)
    return verb, task


def _evidence_block(
    table: ActionTable, ids: IntArray, state: SwiftState, verb: IntArray
) -> tuple[IntArray, FloatArray]:
    """(n, EVIDENCE_SLOTS) keys and values of the evidence block: the evidence keys of the alternative
    a candidate names (the "none" row for the others), crossed with its verb."""
    ev_keys, ev_mask = evidence_keys(table.semantics.evidence, state)
    alternative = table.task_alternatives(ids, state.task_description)  # -1: the "none" row
    keys: IntArray = ev_keys[alternative] ^ verb[:, None]
    values: FloatArray = ev_mask[alternative]
    return keys, values


def feature_index(
    table: ActionTable,
    ids: IntArray,
    state: SwiftState,
    box: bool = True,
    scratch: Scratch | None = None,
    buckets: int = N_BUCKETS,
    evidence: bool = False,
    states: bool = False,
) -> tuple[IntArray, FloatArray]:
    """Hashed indices (in ``range(buckets)``, a power of two) and values of every feature of every
    candidate: (n, K) each (``box``: as ``dense_features``; ``evidence``: add ``evidence_keys``, crossed
    with the candidate's verb, for the candidates that name a conditional alternative's target;
    ``states``: add ``object_state_keys``, crossed with the verb and ``STATE_CONTEXT``, value 0 for the
    candidates without; a model is trained with or without each). With ``scratch`` both live in its
    reused arrays (valid until its next use). Training reads these; a decision scores with
    ``linear_scores``, the same sum grouped so that it never builds them.

    All hashing is XOR of pre-mixed 64-bit keys, done on int64 views so nothing is converted.
    """
    cand, mask = _sparse_keys(table, ids, state)
    ctx = _context_keys(table, state)
    verb, task = _verb_and_task(table, ids, state)
    n, d, slots = len(ids), len(DENSE), CAND_SLOTS + 1
    k_sparse = slots * len(ctx)
    k_evidence = EVIDENCE_SLOTS if evidence else 0
    k_states = STATE_SLOTS * STATE_CONTEXT if states else 0
    width = k_sparse + k_evidence + k_states + 4 * d
    arrays = scratch if scratch is not None else Scratch()
    idx = arrays.take("index", (n, width), np.int64)
    val = arrays.take("value", (n, width), np.float32)
    np.bitwise_xor(cand[:, :, None], ctx[None, None, :], out=idx[:, :k_sparse].reshape(n, slots, -1))
    val[:, :k_sparse].reshape(n, slots, -1)[:] = mask[:, :, None]
    at = k_sparse
    if evidence:
        ev_keys, ev_values = _evidence_block(table, ids, state, verb)
        idx[:, at : at + k_evidence] = ev_keys
        val[:, at : at + k_evidence] = ev_values
        at += k_evidence
    if states:
        rows, st_keys, st_values = _state_block(table, ids, state, verb, ctx)
        idx[:, at : at + k_states] = 0
        val[:, at : at + k_states] = 0.0
        idx[rows, at : at + k_states] = st_keys
        val[rows, at : at + k_states] = st_values
        at += k_states
    dense = dense_features(table, ids, state, box)
    base = _DENSE_BASE
    by_verb = base[None, :] ^ verb[:, None]
    idx[:, at : at + d] = base[None, :]
    idx[:, at + d : at + 2 * d] = (base ^ task)[None, :]
    idx[:, at + 2 * d : at + 3 * d] = by_verb ^ 7
    idx[:, at + 3 * d :] = by_verb ^ (task >> 3)
    np.bitwise_and(idx, buckets - 1, out=idx)
    for g in range(4):
        val[:, at + g * d : at + (g + 1) * d] = dense
    return idx, val


def linear_scores(
    table: ActionTable,
    ids: IntArray,
    state: SwiftState,
    w: FloatArray,
    box: bool = True,
    scratch: Scratch | None = None,
    evidence: bool = False,
    states: bool = False,
) -> FloatArray:
    """``w · phi(s, a)`` for every candidate (``len(w)`` buckets): the sum of ``(w[idx] * val)``
    over ``feature_index``'s row, grouped so that a decision does not build the (n, K) matrices (equal
    up to float32 rounding; a test holds it to 1e-5).

    - sparse block: per context key, each candidate's masked sum over its candidate keys (the mask is 0
      or 1), kept in ``scratch.sums`` (``ContextSums``) while the task description and ``w`` stand, so
      that a decision gathers weights only for the context keys and candidates it has not met;
    - object-state block: only the rows of the candidates that have one;
    - dense block: its bias and task crosses are the same for every candidate (one dot product); only
      the two verb crosses are gathered per candidate.

    At 3,000 valid actions this reads about 60% fewer weights than the matrix form before any sums are
    kept (``fastslow bench swift``). With ``scratch`` its index and gather buffers are reused.
    """
    arrays = scratch if scratch is not None else Scratch()
    low = len(w) - 1
    ctx = _context_keys(table, state)
    verb, task = _verb_and_task(table, ids, state)
    sums = arrays.sums
    rows = sums.rows(w, state.task_description, ctx.tolist(), len(table.strings))
    block = sums.values[rows[:, None], ids[None, :]]
    unknown = np.isnan(block)
    if unknown.any():
        need = np.flatnonzero(unknown.any(axis=0))
        stale = np.flatnonzero(unknown.any(axis=1))
        cand, mask = _sparse_keys(table, ids[need], state)
        _fill_sums(ids[need], cand, mask, sums.values, rows[stale], ctx[stale], w, arrays)
        block[stale[:, None], need[None, :]] = sums.values[rows[stale, None], ids[None, need]]
    out: FloatArray = block.sum(axis=0)
    if evidence:
        ev_keys, ev_values = _evidence_block(table, ids, state, verb)
        out += (w[ev_keys & low] * ev_values).sum(axis=1)
    if states:
        rows, st_keys, st_values = _state_block(table, ids, state, verb, ctx)
        out[rows] += (w[st_keys & low] * st_values).sum(axis=1)
    dense = dense_features(table, ids, state, box)
    base = _DENSE_BASE
    shared = w[base & low] + w[(base ^ task) & low]
    by_verb = base[None, :] ^ verb[:, None]
    per_verb = w[(by_verb ^ 7) & low] + w[(by_verb ^ (task >> 3)) & low]
    out += dense @ shared + (dense * per_verb).sum(axis=1)
    return out
