"""The openai backend (Sage/Critic models, paper §3 and §4) against real servers: llama.cpp's
OpenAI-compatible server on the embedded GGUF, a listener that never answers (conftest.py), a closed port,
and a proxy that injects 5xx/429/400 before forwarding."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fastslow.errors import ModelError, ModelUnavailableError
from fastslow.events import ListSink, ModelCall
from fastslow.models import Message, ModelCallError, ModelConfig, call_model, make_model
from integration.llama_server import SERVED_MODEL, free_port, serve_llama


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a `python -m llama_cpp.server` on a free loopback port: one thread, small context."""
    with serve_llama(tmp_path_factory.mktemp("llama_server")) as base_url:
        yield base_url


class FlakyProxy:
    """Answers the first ``failures`` POSTs with HTTP ``status``, then forwards everything to ``upstream``."""

    def __init__(self, upstream: str, failures: int, status: int) -> None:
        self.upstream = upstream.removesuffix("/v1")
        self.failures = failures
        self.status = status
        self.posts = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                proxy.posts += 1
                if proxy.posts <= proxy.failures:
                    self._reply(proxy.status, json.dumps({"error": {"message": "injected failure"}}).encode())
                else:
                    self._forward(body)

            def _forward(self, body: bytes | None) -> None:
                request = urllib.request.Request(
                    proxy.upstream + self.path, data=body, headers={"Content-Type": "application/json"}
                )
                try:
                    with urllib.request.urlopen(request, timeout=60) as resp:
                        self._reply(resp.status, resp.read())
                except urllib.error.HTTPError as exc:
                    self._reply(exc.code, exc.read())

            def _reply(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:  # keep test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def flaky_proxy(llama_server: str) -> Iterator[Callable[[int, int], FlakyProxy]]:
    """Factory: ``flaky_proxy(failures, status)`` starts a FlakyProxy in front of the llama.cpp server."""
    proxies: list[FlakyProxy] = []

    def start(failures: int, status: int) -> FlakyProxy:
        proxies.append(FlakyProxy(llama_server, failures, status))
        return proxies[-1]

    yield start
    for proxy in proxies:
        proxy.close()


QUESTION: list[Message] = [{"role": "user", "content": "Name three colours of the rainbow."}]


def openai_cfg(base_url: str, **overrides: object) -> ModelConfig:
    fields: dict[str, object] = {
        "kind": "openai",
        "base_url": base_url,
        "model": SERVED_MODEL,
        "max_tokens": 24,
        "timeout_s": 30.0,
        "max_retries": 2,
        "backoff_s": 0.05,
    }
    fields.update(overrides)
    return ModelConfig.model_validate(fields)


def test_completion_with_usage(llama_server: str) -> None:
    model = make_model(openai_cfg(llama_server))
    model.check_available()
    c = model.complete(QUESTION)
    assert c.text.strip()
    assert (c.backend, c.model, c.attempts) == ("openai", SERVED_MODEL, 1)
    assert c.prompt_tokens > 0
    assert 0 < c.completion_tokens <= 24
    assert c.latency_s > 0


def test_usage_counts_are_consistent(llama_server: str) -> None:
    model = make_model(openai_cfg(llama_server))
    short = model.complete(QUESTION, max_tokens=1)
    again = model.complete(QUESTION, max_tokens=1)
    longer = model.complete(
        [{"role": "user", "content": "Name three colours of the rainbow, and say which is warmest."}],
        max_tokens=1,
    )
    assert short.completion_tokens == again.completion_tokens == 1
    assert short.prompt_tokens == again.prompt_tokens
    assert longer.prompt_tokens > short.prompt_tokens


def test_stop_sequence_is_honoured(llama_server: str) -> None:
    model = make_model(openai_cfg(llama_server, max_tokens=32))
    full = model.complete(QUESTION)
    words = full.text.split()
    assert len(words) >= 4, full.text
    stop = words[len(words) // 2]  # temperature 0: the same reply again, cut before this word
    cut = model.complete(QUESTION, stop=[stop])
    assert stop not in cut.text
    assert cut.text == full.text[: full.text.index(stop)]
    assert cut.completion_tokens < full.completion_tokens


def test_silent_server_times_out_after_bounded_retries(silent_server: str) -> None:
    model = make_model(openai_cfg(silent_server, timeout_s=0.3, max_retries=2, backoff_s=0.05))
    start = time.monotonic()
    with pytest.raises(ModelCallError) as info:
        model.complete(QUESTION)
    elapsed = time.monotonic() - start
    assert info.value.attempts == 3
    assert "Timeout" in str(info.value)
    assert 0.9 <= elapsed < 5  # 3 x 0.3 s timeouts + 0.05 + 0.1 s back-off


@pytest.mark.parametrize("status", [503, 429])
def test_retries_then_succeeds(flaky_proxy: Callable[[int, int], FlakyProxy], status: int) -> None:
    proxy = flaky_proxy(2, status)
    model = make_model(openai_cfg(proxy.base_url))
    sink = ListSink()
    c = call_model(model, QUESTION, sink=sink, role="sage_plan", step=7)
    assert c.attempts == 3
    assert proxy.posts == 3
    assert c.text.strip() and c.completion_tokens > 0
    (event,) = sink.events
    assert isinstance(event, ModelCall)
    assert (event.attempts, event.error, event.step) == (3, None, 7)


def test_retries_are_bounded(flaky_proxy: Callable[[int, int], FlakyProxy]) -> None:
    proxy = flaky_proxy(100, 500)
    model = make_model(openai_cfg(proxy.base_url, max_retries=1))
    with pytest.raises(ModelCallError, match="HTTP 500") as info:
        model.complete(QUESTION)
    assert info.value.attempts == proxy.posts == 2


def test_client_errors_are_not_retried(flaky_proxy: Callable[[int, int], FlakyProxy]) -> None:
    proxy = flaky_proxy(1, 400)
    model = make_model(openai_cfg(proxy.base_url))
    with pytest.raises(ModelCallError, match="HTTP 400") as info:
        model.complete(QUESTION)
    assert info.value.attempts == proxy.posts == 1


def test_unreachable_server() -> None:
    model = make_model(openai_cfg(f"http://127.0.0.1:{free_port()}/v1", max_retries=1, backoff_s=0.01))
    with pytest.raises(ModelUnavailableError, match="is not answering"):
        model.check_available()
    with pytest.raises(ModelError) as info:
        model.complete(QUESTION)
    assert not isinstance(info.value, ModelUnavailableError)  # mid-episode: the caller falls back


def test_missing_api_key_is_reported_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FASTSLOW_TEST_KEY", raising=False)
    with pytest.raises(ModelUnavailableError, match="FASTSLOW_TEST_KEY"):
        make_model(openai_cfg("http://127.0.0.1:9/v1", api_key_env="FASTSLOW_TEST_KEY"))
