"""Training the embedded imitation Swift (paper §3: Swift learns by imitating oracle trajectories).

``fastslow train swift --data DIR`` fits the linear ranker of ``swift/imitation.py`` with a listwise
(softmax) loss: at each gold step the gold action must outscore the other valid actions. Each step
keeps the gold action and a sample of negatives, half of them close to the gold action (same verb or
a shared word) since those are the confusable ones; later epochs add the negatives the current model
ranks highest (hard-negative mining). Adagrad with L2; the whole run is numpy on one core.

Gold actions are matched to the valid list verbatim, after the renames of ``data.rename_candidates``,
or else by a valid action with the same verb about the same first object: ScienceWorld's gold paths
spell objects otherwise than the valid list ("apple tree in the adult stage in pot 6" for "apple tree
in pot 6" or "adult apple tree"; "battery anode" for "anode in battery"; "pour cup containing blue
paint in art studio in jug" for "... into jug"). The first objects (``head_object``) must be the same
words or one's words must hold the other's, so the container ("self watering flower pot 6"), a part
("flower in apricot tree") and a reversed move ("move flower pot 1 to apple seed") are not it. Among
those (no number the gold action does not have: "flower pot 7" is not "flower pot 6"; the object after
" to " or " into " the same by the same test), one whose first object holds the gold action's wins,
then one that names nothing the gold action does not ("adult apple tree" over "apple tree in flower
pot containing apple tree and soil and water"), then the one naming most of the gold action's words,
then the most words in the same order, then the longest.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fastslow.core.semantics import WorldSemantics
from fastslow.env.config import DEFAULT_WORLD
from fastslow.env.world import get_world
from fastslow.errors import UsageError
from fastslow.swift.data import MANIFEST, match_valid, read_rows
from fastslow.swift.features import (
    N_BUCKETS,
    ActionTable,
    FloatArray,
    IntArray,
    SwiftState,
    feature_index,
    words,
)
from fastslow.swift.imitation import MEMORY_WEIGHTS, SwiftWeights, dense_global_index
from fastslow.swift.policy import ANCHORED, NAMED_ONLY, default_semantics

Float64Array = npt.NDArray[np.float64]


def label_of(gold: str, valid: Sequence[str], semantics: WorldSemantics | None = None) -> str | None:
    """The valid action a gold action denotes (see module docstring), or None; read with the world's
    ``semantics`` (None: the default world's, ScienceWorld)."""
    semantics = semantics or default_semantics()
    direct = match_valid(gold, valid, semantics)
    if direct is not None:
        return direct
    verb_of = semantics.verb_of
    verb = verb_of(gold)
    gold_words = gold.lower().split()
    named = set(gold_words) - _FUNCTION_WORDS
    head = set(head_object(gold.lower(), verb).split())
    destination = _destination(gold.lower())
    best: tuple[tuple[bool, bool, float, float, int], str] | None = None
    for action in valid:
        if verb_of(action) != verb or len(action.split()) < 3:
            continue
        other = set(head_object(action, verb).split())
        # Both name the same first object: one's head words hold the other's ("adult apple tree" and
        # "apple tree"; "anode" and "battery anode"). Else it is another object, or the reverse move.
        if not _same_object(head, other) or not _same_object(destination, _destination(action)):
            continue
        words_ = action.split()
        if any(w.isdigit() and w not in named for w in words_):
            continue  # "flower pot 7" is not "flower pot 6"
        names = set(words_) - _FUNCTION_WORDS
        recall = len(named & names) / max(len(named), 1)
        in_order = 2 * _common_subsequence(gold_words, words_) / (len(gold_words) + len(words_))
        key = (head <= other, names <= named, recall, in_order, len(action))
        if best is None or key > best[0]:
            best = (key, action)
    return None if best is None else best[1]


def _same_object(a: set[str] | None, b: set[str] | None) -> bool:
    """Whether two head-word sets may name the same object (one holds the other); None (an action
    without that object) does not rule it out."""
    if a is None or b is None:
        return True
    return bool(a) and bool(b) and (a <= b or b <= a)


def _destination(action: str) -> set[str] | None:
    """Head words of the object after the last " to " or " into " ("move A in B to C" -> C), or None."""
    at = max(action.rfind(" to "), action.rfind(" into "))
    if at < 0:
        return None
    rest = action[at + 1 :].split(" ", 1)[1]
    return set(_HEAD_END.split(rest, maxsplit=1)[0].split())


_FUNCTION_WORDS = frozenset({"a", "an", "the", "in", "on", "to", "into", "containing", "and", "of", "with"})
"""Words that relate or qualify objects rather than name them (for ``label_of``'s recall)."""


def _common_subsequence(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two word lists (the words in the same order)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


_HEAD_END = re.compile(r" (?:in|on|to|into|containing) ")


def head_object(action: str, verb: str) -> str:
    """The first object an action names, before any relation word: ("look at apple tree in the adult
    stage in pot 6", "look at") -> "apple tree"; ("move seed on plant to cup", "move") -> "seed";
    ("look at flower pot containing apple seed", "look at") -> "flower pot"."""
    target = _after(action, verb)
    return _HEAD_END.split(action if target is None else target, maxsplit=1)[0]


def _after(action: str, verb: str) -> str | None:
    """The text after ``verb`` and one space, as written; None when ``action`` does not start so."""
    prefix = verb + " "
    return action[len(prefix) :] if action.startswith(prefix) else None


@dataclass
class Example:
    state: SwiftState
    ids: IntArray
    """Table ids of all valid actions."""
    gold: int
    """Position of the gold action in ``ids``."""
    episode: str


@dataclass(frozen=True)
class TrainSettings:
    epochs: int = 3
    negatives: int = 200
    mined: int = 0
    """Hard negatives mined from all valid actions (0 = off: it lowered held-out top-1, 0.72 -> 0.35)."""
    lr: float = 0.1
    l2: float = 5e-2
    holdout_every: int = 0
    """Hold out every n-th episode to measure gold-action accuracy (0 = train on all)."""
    seed: int = 0
    seeds: int = 1
    """Fit this many models (seeds ``seed``, ``seed + 1``, ...) and ship the mean of their weights: the
    scores are linear in the weights, so the mean is the ensemble of the rankers, at one ranker's cost."""
    hash_bits: int = N_BUCKETS.bit_length() - 1
    """The hashed weight vector holds 2**hash_bits buckets (default: ``features.N_BUCKETS``)."""
    evidence: bool = True
    """Train with the evidence keys (``features.evidence_keys``); recorded in the weights' meta, which
    is how a run knows to compute them."""
    object_states: bool = True
    """Train with the object-state keys (``features.object_state_keys``); recorded in the meta too."""


def dataset_semantics(data: Path | Sequence[Path]) -> WorldSemantics:
    """The semantics of the world a dataset (or several, of one world) was played in: its manifest's
    ``world`` (a dataset without one is ScienceWorld's, made before a second world existed)."""
    names = set()
    for d in [data] if isinstance(data, Path) else data:
        try:
            manifest = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = {}
        names.add(str(manifest.get("world", DEFAULT_WORLD)) if isinstance(manifest, dict) else DEFAULT_WORLD)
    if len(names) > 1:
        raise UsageError(f"the datasets were played in different worlds ({', '.join(sorted(names))})")
    return get_world(names.pop() if names else DEFAULT_WORLD).semantics


def _rows(data: Path | Sequence[Path], only: Collection[str] | None) -> Iterator[dict[str, Any]]:
    for d in [data] if isinstance(data, Path) else data:
        yield from read_rows(d, only)


@dataclass
class FocusVocabulary:
    """Per task, the words of the objects gold paths focus on (the safety policy's focus rule), whether
    those objects are named in the task description, and whether they share a word with it. The focus
    is the world's commitment (``WorldSemantics.commitment_verb``): a world without one has none."""

    semantics: WorldSemantics = field(default_factory=default_semantics)
    found: dict[str, set[str]] = field(default_factory=dict)
    named: dict[str, list[bool]] = field(default_factory=dict)
    anchored: dict[str, list[bool]] = field(default_factory=dict)

    def add(self, task_name: str, task_description: str, label: str) -> None:
        """Note a gold step's label (in the valid list's spelling) if it is a focus."""
        verb = self.semantics.commitment_verb
        focused = None if verb is None else _after(label, verb)
        if focused is None:
            return
        target = words((self.semantics.arguments(label) or [focused])[0])
        self.found.setdefault(task_name, set()).update(target)
        described = set(words(task_description))
        self.named.setdefault(task_name, []).append(set(target) <= described)
        self.anchored.setdefault(task_name, []).append(bool(set(target) & described))

    def add_datasets(self, data: Sequence[Path]) -> int:
        """Note the gold focus steps of whole datasets (only their focus rows are labelled); returns how
        many focus steps were read."""
        seen = 0
        verb = self.semantics.commitment_verb
        for row in _rows(data, None):
            gold = str(row["gold_action"])
            focus = verb is not None and _after(gold, verb) is not None
            label = label_of(gold, row["valid_actions"], self.semantics) if focus else None
            if label is not None:
                self.add(str(row["task_name"]), str(row["task_description"]), label)
                seen += 1
        return seen

    def result(self) -> dict[str, set[str]]:
        """The focus words per task; a task whose gold targets are mostly named in its description gets
        ``NAMED_ONLY`` instead: there only named objects may be focused on (a test variation's "green
        light bulb" must not match training's "red light bulb"). A task whose every gold target shares a
        word with its description ("egg turtle" for "the life stages of the turtle") also gets
        ``ANCHORED``: a focus whose target shares none is refused (training's "crocodile" in a variation
        about the moth)."""
        out = {task: set(targets) for task, targets in self.found.items()}
        for task, flags in self.named.items():
            if sum(flags) >= len(flags) / 2:
                out[task] = {NAMED_ONLY}
            elif all(self.anchored[task]):
                out[task].add(ANCHORED)
        return out


def load_examples(
    data: Path | Sequence[Path],
    table: ActionTable,
    only: Collection[str] | None = None,
    focus_data: Sequence[Path] = (),
) -> tuple[list[Example], dict[str, set[str]], dict[str, Any]]:
    """Labelled examples, per-task focus words, and label statistics of one dataset or several (a gold
    dataset and DAgger's on-policy rows of the same variations, ``eval/dagger.py``); with ``only``, of
    just the episodes it names ("TT-VVVV", in every dataset: a held-out variation is held out whole).
    ``focus_data``: gold datasets read for their focus steps only (more of the objects a task focuses on,
    without changing the examples)."""
    examples: list[Example] = []
    vocabulary = FocusVocabulary(table.semantics)
    total = matched = 0
    for row in _rows(data, only):
        total += 1
        gold = str(row["gold_action"])
        valid = row["valid_actions"]
        label = label_of(gold, valid, table.semantics)
        if label is None:
            continue
        matched += 1
        state = SwiftState.from_row(row)
        ids = table.ids(state.valid_actions)
        # The table keeps each action string once; an example keeps its ids only (every train
        # variation is ~140k steps of ~2,000 valid actions: as strings they would not fit in memory).
        state.valid_actions = ()
        examples.append(
            Example(state, ids, valid.index(label), f"{row['task_id']:02d}-{row['variation']:04d}")
        )
        if row.get("source") != "dagger":
            # read from gold paths alone: an on-policy row's focus label repeats a gold path's
            vocabulary.add(state.task_name, state.task_description, label)
    stats: dict[str, Any] = {"rows": total, "labelled": matched}
    if focus_data:
        stats["focus_steps_added"] = vocabulary.add_datasets(focus_data)
    return examples, vocabulary.result(), stats


def _sample(
    ex: Example, table: ActionTable, settings: TrainSettings, rng: random.Random, mined: list[int]
) -> IntArray:
    """Candidate positions: gold first, then close and random negatives, then mined ones."""
    n = len(ex.ids)
    if n - 1 <= settings.negatives + settings.mined:
        return np.asarray([ex.gold, *(i for i in range(n) if i != ex.gold)], dtype=np.int64)
    gold_id = ex.ids[ex.gold]
    gold_words = table.words[gold_id]
    gold_words = gold_words[gold_words != -1]
    near = (table.verb[ex.ids] == table.verb[gold_id]) | np.isin(table.words[ex.ids], gold_words).any(axis=1)
    near[ex.gold] = False
    close = np.flatnonzero(near).tolist()
    half = settings.negatives // 2
    chosen = set(rng.sample(close, min(half, len(close))))
    chosen.update(m for m in mined if m != ex.gold)
    # the positions left, ascending (a list: rng.sample's draws depend on it being the same sequence)
    left = np.ones(n, dtype=bool)
    left[ex.gold] = False
    left[list(chosen)] = False
    rest = np.flatnonzero(left).tolist()
    chosen.update(rng.sample(rest, min(settings.negatives + settings.mined - len(chosen), len(rest))))
    return np.asarray([ex.gold, *sorted(chosen)], dtype=np.int64)


class GradientSums:
    """Per-index sums of a sparse gradient: each distinct index once, with the sum of its values.

    The same sums as ``np.unique(..., return_inverse=True)`` followed by ``np.bincount`` (float64,
    values added in the order they come) without the sort: 0.8 ms instead of 3.0 for an example of
    201 candidates with 160 features each (what is left is random access into the 1M buckets). A
    scratch vector over all buckets collects the sums and is zeroed again at the indices used; a second
    one picks one occurrence of each index (whichever write of ``pos[flat] = k`` lands, exactly one k
    matches). The indices come unsorted, which an elementwise Adagrad update does not see."""

    def __init__(self, size: int) -> None:
        self._sum = np.zeros(size, dtype=np.float64)
        self._pos = np.zeros(size, dtype=np.int64)

    def __call__(
        self, flat: IntArray, values: npt.NDArray[np.floating[Any]]
    ) -> tuple[IntArray, Float64Array]:
        """(distinct indices of ``flat``, the float64 sum of ``values`` at each)."""
        order = np.arange(len(flat))
        self._pos[flat] = order
        uniq = flat[self._pos[flat] == order]
        # float64 first, as bincount casts its weights: ufunc.at with a cast takes a slow path (~70x).
        np.add.at(self._sum, flat, values.astype(np.float64, copy=False))
        out = self._sum[uniq]
        self._sum[uniq] = 0.0
        return uniq, out


def _scores(
    w: FloatArray, table: ActionTable, ex: Example, pos: IntArray, evidence: bool, states: bool = False
) -> tuple[FloatArray, IntArray, FloatArray]:
    idx, val = feature_index(table, ex.ids[pos], ex.state, buckets=len(w), evidence=evidence, states=states)
    return (w[idx] * val).sum(axis=1), idx, val


def accuracy(
    w: FloatArray, table: ActionTable, examples: Sequence[Example], evidence: bool, states: bool = False
) -> float:
    """Share of steps where the gold action ranks first among all valid actions."""
    if not examples:
        return 0.0
    hits = 0
    for ex in examples:
        s, _, _ = _scores(w, table, ex, np.arange(len(ex.ids)), evidence, states)
        hits += int(np.argmax(s) == ex.gold)
    return hits / len(examples)


def _fit(
    examples: list[Example],
    held: list[Example],
    table: ActionTable,
    settings: TrainSettings,
    say: Callable[[str], None],
    t0: float,
) -> tuple[FloatArray, float | None]:
    """One seeded fit: the averaged weights and the last epoch's held-out top-1 (None without held)."""
    rng = random.Random(settings.seed)
    buckets = 1 << settings.hash_bits
    w = np.zeros(buckets, dtype=np.float32)
    acc = np.full(buckets, 1e-3, dtype=np.float32)
    u = np.zeros(buckets, dtype=np.float32)
    count = 0
    sums = GradientSums(buckets)
    mined: dict[int, list[int]] = {}
    order = list(range(len(examples)))

    def averaged() -> FloatArray:
        """The averaged weights with the hand-set memory weights: what ships (and what the held-out
        top-1 is of)."""
        out = (w - u / max(count, 1)).astype(np.float32)
        for name, value in MEMORY_WEIGHTS.items():
            out[dense_global_index(name, buckets)] = value
        return out

    top1: float | None = None
    for epoch in range(settings.epochs):
        rng.shuffle(order)
        loss = 0.0
        for k in order:
            ex = examples[k]
            pos = _sample(ex, table, settings, rng, mined.get(k, []))
            s, idx, val = _scores(w, table, ex, pos, settings.evidence, settings.object_states)
            p = np.exp(s - s.max())
            p /= p.sum()
            loss -= float(np.log(max(p[0], 1e-12)))
            g = p.copy()
            g[0] -= 1.0
            uniq, summed = sums(idx.ravel(), (g[:, None] * val).ravel())
            gsum = summed.astype(np.float32) + settings.l2 * w[uniq]
            acc[uniq] += gsum * gsum
            step = settings.lr * gsum / np.sqrt(acc[uniq])
            w[uniq] -= step
            # Averaged weights (lazy form): what generalises to unseen variations, not the last iterate.
            count += 1
            u[uniq] -= count * step
        if settings.mined and epoch + 1 < settings.epochs and epoch % 2 == 0:
            # Mine the negatives the current model ranks highest among *all* valid actions.
            for k, ex in enumerate(examples):
                s, _, _ = _scores(
                    w, table, ex, np.arange(len(ex.ids)), settings.evidence, settings.object_states
                )
                top = np.argsort(-s)[: settings.mined + 1]
                mined[k] = [int(t) for t in top if t != ex.gold][: settings.mined]
        mean_loss = loss / max(len(order), 1)
        line = f"epoch {epoch + 1}/{settings.epochs}: loss {mean_loss:.3f}"
        if held:
            top1 = accuracy(averaged(), table, held, settings.evidence, settings.object_states)
            line += f", held-out top-1 {top1:.3f}"
        say(f"{line} ({time.perf_counter() - t0:.0f} s)")
    return averaged(), top1


def train(
    data: Path | Sequence[Path],
    settings: TrainSettings = TrainSettings(),
    progress: Callable[[str], None] | None = None,
    focus_data: Sequence[Path] = (),
) -> tuple[SwiftWeights, dict[str, Any]]:
    """Fit the ranker on a gold dataset (or several datasets, read in order); returns the weights and a
    training report. ``focus_data`` widens the focus words only (``load_examples``)."""
    say = progress or (lambda _line: None)
    t0 = time.perf_counter()
    table = ActionTable(dataset_semantics(data))
    examples, focus, stats = load_examples(data, table, focus_data=focus_data)
    say(f"{stats['labelled']}/{stats['rows']} steps labelled, {len(table.strings)} distinct actions")
    held: list[Example] = []
    if settings.holdout_every:
        episodes = sorted({e.episode for e in examples})
        out = set(episodes[:: settings.holdout_every])
        held = [e for e in examples if e.episode in out]
        examples = [e for e in examples if e.episode not in out]
    seeds = [settings.seed + i for i in range(max(1, settings.seeds))]

    def tell(seed: int) -> Callable[[str], None]:
        return say if len(seeds) == 1 else (lambda line: say(f"seed {seed}: {line}"))

    fits = [_fit(examples, held, table, replace(settings, seed=seed), tell(seed), t0) for seed in seeds]
    w: FloatArray = (
        fits[0][0] if len(fits) == 1 else np.stack([f[0] for f in fits]).mean(axis=0, dtype=np.float32)
    )
    top1 = fits[0][1] if len(fits) == 1 else None
    report: dict[str, Any] = {
        **stats,
        "train_steps": len(examples),
        "epochs": settings.epochs,
        "evidence": settings.evidence,
        "object_states": settings.object_states,
        **({"seeds": seeds} if len(seeds) > 1 else {}),
        "train_s": round(time.perf_counter() - t0, 1),
    }
    if held:
        report["holdout_steps"] = len(held)
        # the last epoch's figure is of these very weights: not scored a second time
        report["holdout_top1"] = round(
            accuracy(w, table, held, settings.evidence, settings.object_states) if top1 is None else top1, 4
        )
    episodes = sorted({e.episode for e in examples} | {e.episode for e in held})
    held_out = sorted({e.episode for e in held})
    weights = SwiftWeights(w, focus, {**report, "episodes": episodes, "held_out": held_out})
    return weights, report
