"""The openai backend (Sage/Critic models, paper §3 and §4) against servers that answer wrongly or not at
all: HTTP 200 with bodies that are not chat completions or model lists, and the per-call time budget on a
listener that never answers. Every server is a real loopback one (loopback_servers.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from loopback_servers import MODEL_LIST, Answer, CannedServer, SilentServer, completion_json

from fastslow.errors import ModelError, ModelUnavailableError
from fastslow.events import ListSink, ModelCall
from fastslow.models import Message, ModelCallError, ModelConfig, call_model, make_model

QUESTION: list[Message] = [{"role": "user", "content": "Name three colours of the rainbow."}]

HTML_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n"
    "<body><h1>Bad Gateway</h1><p>The upstream server did not answer in time; this page is long enough"
    " to be cut in the error message.</p></body></html>\n"
)


def cfg(base_url: str, **overrides: object) -> ModelConfig:
    fields: dict[str, object] = {
        "kind": "openai",
        "base_url": base_url,
        "model": "canned",
        "timeout_s": 10.0,
        "max_retries": 2,
        "backoff_s": 0.01,
    }
    fields.update(overrides)
    return ModelConfig.model_validate(fields)


def test_html_page_with_200_is_a_retried_model_call_error(canned: Callable[..., CannedServer]) -> None:
    server = canned([Answer(HTML_PAGE, content_type="text/html")])
    with pytest.raises(ModelCallError) as info:
        make_model(cfg(server.base_url)).complete(QUESTION)
    message = str(info.value)
    assert info.value.attempts == server.posts == 3  # retried like a 5xx, up to max_retries
    assert "failed after 3 attempt(s): answered 200 with a body that is not a chat completion" in message
    assert "'<!DOCTYPE html>\\n<html><head><title>502 Bad Gateway" in message  # the start, quoted
    assert "cut in the error message" not in message  # ...and only the start (80 characters)
    assert "\n" not in message


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ('{"object": "error", "message": "no such route"}', "application/json"),  # no choices
        ('{"choices": []}', "application/json"),  # nothing to reply with
        ('{"choices": [{"index": 0, "text": "red"}]}', "application/json"),  # a /completions answer
        ('{"choices": [{"message": {"content": ["red"]}}]}', "application/json"),  # content not text
        ('{"choices": [{"message": {"content": "red"}}], "usage": {"prompt_tokens": -3}}', "text/json"),
        ('"just a string"', "application/json"),
        ('[{"choices": []}]', "application/json"),
        ('{"choices": [{"message": ', "application/json"),  # cut off: the content type says JSON, it is not
        ("", "application/json"),
        ("OK", "text/plain"),
    ],
)
def test_bodies_that_are_not_chat_completions(
    canned: Callable[..., CannedServer], body: str, content_type: str
) -> None:
    server = canned([Answer(body, content_type=content_type)])
    not_a_completion = "answered 200 with a body that is not a chat completion"
    with pytest.raises(ModelCallError, match=not_a_completion) as info:
        make_model(cfg(server.base_url, max_retries=1)).complete(QUESTION)
    assert info.value.attempts == server.posts == 2
    assert repr(body.strip()[:80]) in str(info.value)


def test_a_garbled_answer_is_retried_and_the_next_one_used(canned: Callable[..., CannedServer]) -> None:
    server = canned(
        [
            Answer(HTML_PAGE, content_type="text/html"),
            completion_json("red, orange, yellow", {"prompt_tokens": 17, "completion_tokens": 6}),
        ]
    )
    sink = ListSink()
    c = call_model(make_model(cfg(server.base_url)), QUESTION, sink=sink, role="sage_plan", step=3)
    assert (c.text, c.prompt_tokens, c.completion_tokens, c.attempts) == ("red, orange, yellow", 17, 6, 2)
    assert server.posts == 2
    (event,) = sink.events
    assert isinstance(event, ModelCall)
    assert (event.attempts, event.error, event.completion) == (2, None, "red, orange, yellow")


def test_missing_usage_and_null_content_are_accepted(canned: Callable[..., CannedServer]) -> None:
    # Both are legal: some servers send no usage, and a tool-only reply has content null.
    server = canned([completion_json(None)])
    c = make_model(cfg(server.base_url)).complete(QUESTION)
    assert (c.text, c.prompt_tokens, c.completion_tokens, c.attempts) == ("", 0, 0, 1)


def test_failed_call_is_logged_and_is_not_unavailable(canned: Callable[..., CannedServer]) -> None:
    server = canned([Answer("<html>maintenance</html>", content_type="text/html")])
    sink = ListSink()
    with pytest.raises(ModelError) as info:
        call_model(make_model(cfg(server.base_url)), QUESTION, sink=sink, role="critic", step=9)
    assert not isinstance(info.value, ModelUnavailableError)  # mid-episode: the caller falls back
    (event,) = sink.events
    assert isinstance(event, ModelCall)
    assert event.attempts == 3
    assert event.error is not None and "not a chat completion: '<html>maintenance</html>'" in event.error


@pytest.mark.parametrize(
    ("models", "shown"),
    [
        (Answer(HTML_PAGE, content_type="text/html"), "<!DOCTYPE html>"),
        (Answer(json.dumps({"models": ["canned"]})), '{"models": ["canned"]}'),  # Ollama's /api/tags shape
        (Answer(json.dumps({"data": [{"name": "canned"}]})), '{"data": [{"name": "canned"}]}'),  # no id
        (Answer("not json at all"), "not json at all"),
    ],
)
def test_check_available_rejects_what_is_not_a_model_list(
    canned: Callable[..., CannedServer], models: Answer, shown: str
) -> None:
    server = canned([completion_json("unused")], models)
    with pytest.raises(ModelUnavailableError) as info:
        make_model(cfg(server.base_url)).check_available()
    message = str(info.value)
    assert message.startswith(f"{server.base_url}/models answered 200 with a body that is not a model list")
    assert shown in message
    assert "base_url" in message and "\n" not in message
    assert server.requests == ["GET /v1/models"]  # one request, no retries, no chat call


def test_check_available_accepts_a_model_list(canned: Callable[..., CannedServer]) -> None:
    server = canned([completion_json("red")], MODEL_LIST)
    model = make_model(cfg(server.base_url))
    model.check_available()
    assert model.complete(QUESTION).text == "red"
    assert server.requests == ["GET /v1/models", "POST /v1/chat/completions"]


def test_budget_bounds_a_hung_server(silent: SilentServer) -> None:
    model = make_model(cfg(silent.base_url, timeout_s=1.0, max_retries=5, backoff_s=0.05, call_budget_s=2.5))
    start = time.monotonic()
    with pytest.raises(ModelCallError) as info:
        model.complete(QUESTION)
    elapsed = time.monotonic() - start
    # 1 s + 0.05 s back-off + 1 s; then 0.45 s are left, less than the 0.1 s back-off + 0.5 s a retry needs.
    assert 2.0 <= elapsed < 3.0
    assert info.value.attempts == len(silent.connections) == 2  # not the 6 that max_retries allows
    assert "call budget of 2.5 s ran out" in str(info.value)
    assert "APITimeoutError" in str(info.value)  # the last error is kept


def test_budget_shorter_than_timeout_caps_the_first_attempt(silent: SilentServer) -> None:
    model = make_model(cfg(silent.base_url, timeout_s=30.0, max_retries=3, call_budget_s=1.0))
    start = time.monotonic()
    with pytest.raises(ModelCallError, match=r"call budget of 1 s ran out") as info:
        model.complete(QUESTION)
    assert time.monotonic() - start < 2.0  # not 30 s
    assert info.value.attempts == 1


def test_no_back_off_sleep_that_cannot_fit_the_budget(silent: SilentServer) -> None:
    model = make_model(cfg(silent.base_url, timeout_s=0.5, max_retries=3, backoff_s=5.0, call_budget_s=3.0))
    start = time.monotonic()
    with pytest.raises(ModelCallError, match=r"budget of 3 s ran out .* 5\.00 s back-off") as info:
        model.complete(QUESTION)
    assert time.monotonic() - start < 1.5  # gave up after the first 0.5 s timeout, without the 5 s sleep
    assert info.value.attempts == len(silent.connections) == 1


def test_retries_run_out_before_a_roomy_budget(silent: SilentServer) -> None:
    model = make_model(cfg(silent.base_url, timeout_s=0.3, max_retries=1, backoff_s=0.05, call_budget_s=60))
    with pytest.raises(ModelCallError) as info:
        model.complete(QUESTION)
    assert info.value.attempts == len(silent.connections) == 2
    assert "budget" not in str(info.value)  # it was max_retries that stopped it
