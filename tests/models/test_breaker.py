"""The circuit breaker per model role (paper §3, §3.2: Sage and the Critic call a model server): a server
that keeps failing costs ``breaker_after`` call budgets, then its calls are skipped and counted, with one
console line when the breaker opens and one when it closes.

Every server here is a real loopback server (loopback_servers.py): one that never answers, one that holds
chat requests unanswered while it lists its models (hung mid-run), one that answers 500 then recovers."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from loopback_servers import HANG, Answer, CannedServer, SilentServer, completion_json
from pydantic import ValidationError

from fastslow.errors import ModelError
from fastslow.events import EpisodeEnd, ListSink, ModelCall, SageCall, read_events
from fastslow.models import CircuitOpenError, ModelConfig, call_model, make_model
from fastslow.models.base import FoldSystem, Message
from fastslow.models.breaker import CircuitBreaker, guard

PLAN: list[Message] = [Message(role="user", content="plan the next steps")]
BREAKER = "fastslow.models.breaker"


def console_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What reaches the console from fastslow's loggers: WARNING and above (no handler is configured, so
    Python's last-resort handler prints exactly these)."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def calls(sink: ListSink) -> list[ModelCall]:
    return [e for e in sink.events if isinstance(e, ModelCall)]


def test_a_hung_server_costs_three_call_budgets_for_ten_calls(
    silent: SilentServer, caplog: pytest.LogCaptureFixture
) -> None:
    budget = 1.0
    cfg = ModelConfig(kind="openai", base_url=silent.base_url, model="m", call_budget_s=budget)
    model = guard(make_model(cfg), "sage", cfg)
    sink = ListSink()
    caplog.set_level(logging.INFO)
    start = time.perf_counter()
    for step in range(10):
        with pytest.raises(ModelError):
            call_model(model, PLAN, sink=sink, role="sage_plan", step=step)
    elapsed = time.perf_counter() - start
    assert elapsed <= 3 * budget + 1.0, elapsed  # not 10 x the budget
    events = calls(sink)
    sent = [e for e in events if e.skipped is None]
    skipped = [e for e in events if e.skipped is not None]
    assert len(sent) == 3 and all(e.error and e.attempts == 1 and e.latency_s >= budget * 0.9 for e in sent)
    assert len(skipped) == 7 and len(silent.connections) == 3  # nothing reached the server once open
    for e in skipped:
        assert e.error is None and e.attempts == 0 and e.messages is None and e.latency_s == 0.0
        reason = e.skipped or ""
        assert reason.startswith(
            "sage model unavailable after 3 failed calls in a row (last: ModelCallError:"
        )
        assert "; call skipped, next try in " in reason
    [line] = console_lines(caplog)
    assert line.startswith("sage model unavailable: 3 calls in a row failed (last: ModelCallError: ")
    assert line.endswith(
        "its calls are skipped for 300 s (model.breaker_cooldown_s), the agent goes on without it"
    )


def test_the_breaker_closes_when_the_server_answers_again(
    canned: Callable[..., CannedServer], caplog: pytest.LogCaptureFixture
) -> None:
    error = Answer('{"error": "overloaded"}', status=500)
    server = canned([error] * 4 + [completion_json("1. look around")])
    cfg = ModelConfig(
        kind="openai", base_url=server.base_url, model="canned", max_retries=0, breaker_cooldown_s=0.3
    )
    model = guard(make_model(cfg), "critic", cfg)
    assert isinstance(model, CircuitBreaker)
    sink = ListSink()
    caplog.set_level(logging.INFO)

    def call() -> str | None:
        try:
            return call_model(model, PLAN, sink=sink, role="critic", step=0).text
        except CircuitOpenError:
            return "skipped"
        except ModelError:
            return None

    outcomes = [call() for _ in range(4)]  # three failures open it; the fourth call is skipped
    assert outcomes == [None, None, None, "skipped"] and model.is_open
    time.sleep(0.35)
    outcomes = [call(), call()]  # the try after the cool-down fails: open again, silently
    assert outcomes == [None, "skipped"]
    time.sleep(0.35)
    outcomes = [call(), call()]  # the next try is answered: closed, calls go through
    assert outcomes == ["1. look around", "1. look around"] and not model.is_open
    assert server.posts == 6
    assert [e.skipped is not None for e in calls(sink)] == [False] * 3 + [True, False, True] + [False] * 2
    opened, closed = console_lines(caplog)  # and nothing for the failed try in between
    assert opened.startswith(
        "critic model unavailable: 3 calls in a row failed (last: ModelCallError: "
        f"{server.base_url} (canned) failed after 1 attempt(s): HTTP 500"
    )
    assert opened.endswith(
        "its calls are skipped for 0.3 s (model.breaker_cooldown_s), the agent goes on without it"
    )
    assert closed == "critic model answers again: circuit breaker closed after 2 skipped calls"


def test_guard_keeps_folding_and_zero_turns_it_off() -> None:
    fold = ModelConfig(kind="scripted", replies=["a"], cycle=True, system_message="fold")
    model = guard(make_model(fold), "sage", fold)
    assert isinstance(model, FoldSystem) and isinstance(model.inner, CircuitBreaker)
    sink = ListSink()
    messages = [
        Message(role="system", content="You plan."),
        Message(role="user", content="Task: boil water."),
    ]
    assert call_model(model, messages, sink=sink, role="sage_plan", step=0).text == "a"
    assert calls(sink)[0].messages == [{"role": "user", "content": "You plan.\n\nTask: boil water."}]
    off = ModelConfig(kind="scripted", replies=["a"], breaker_after=0)
    raw = make_model(off)
    assert guard(raw, "sage", off) is raw
    with pytest.raises(ValidationError, match="breaker_after"):
        ModelConfig(kind="scripted", replies=["a"], breaker_after=-1)
    with pytest.raises(ValidationError, match="breaker_cooldown_s"):
        ModelConfig(kind="scripted", replies=["a"], breaker_cooldown_s=0)


@pytest.mark.slow  # ~20 s: ScienceWorld plays 60 steps; the in-process test above is the fast check
def test_an_eval_against_a_server_hung_mid_run_skips_sage_and_says_so_once(
    canned: Callable[..., CannedServer], tmp_path: Path
) -> None:
    """The whole run (a 60-step episode): the server lists its models (the start-up check passes), then
    never answers a chat request. Sage's first three calls cost a call budget each, every later one is
    skipped at once."""
    server = canned([HANG])
    budget = 1.0
    out = tmp_path / "run"
    args = ["eval", "--config", "baseline", "--set", "dev", "--tasks", "13", "--limit-per-task", "1"]
    for override in (
        "sage.model.kind=openai",
        f"sage.model.base_url={server.base_url}",
        "sage.model.model=canned",
        f"sage.model.call_budget_s={budget}",
        "env.step_limit=60",
    ):
        args += ["-o", override]
    proc = subprocess.run(
        [sys.executable, "-m", "fastslow.cli", *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    events = read_events(next((out / "events").glob("*.jsonl")))
    assert isinstance(events[-1], EpisodeEnd)
    model_calls = [e for e in events if isinstance(e, ModelCall)]
    sent = [e for e in model_calls if e.skipped is None]
    skipped = [e for e in model_calls if e.skipped is not None]
    assert len(sent) == 3 and all(e.error for e in sent) and server.posts == 3
    assert len(model_calls) >= 10, len(model_calls)  # at least 10 Sage calls, 7 or more of them skipped
    assert sum(e.latency_s for e in model_calls) <= 3 * budget * 1.5
    rounds = [e for e in events if isinstance(e, SageCall)]
    assert len(rounds) == len(model_calls)  # each round ended at its planning call
    assert all(r.model_calls == 0 and (r.error or "").startswith("CircuitOpenError: ") for r in rounds[3:])
    usage = json.loads((out / "metrics.json").read_text())["usage"]
    assert usage["model_calls"] == usage["model_call_errors"] == 3
    assert usage["model_calls_skipped"] == len(skipped) and usage["model_calls_skipped_by_role"] == {
        "sage_plan": len(skipped)
    }
    # One line for the outage on the console, none per failed or skipped call.
    assert proc.stderr.count("sage model unavailable: 3 calls in a row failed") == 1, proc.stderr
    assert "Sage call at step" not in proc.stderr and "retrying in" not in proc.stderr
    assert " ".join(proc.stdout.split()).count("warning: sage_plan model call failed") == 1, proc.stdout
