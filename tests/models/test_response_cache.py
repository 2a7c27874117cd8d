"""The exact-prompt response cache (``models.cache``): a temperature-0 request answered once in a run is
answered from the run's cache afterwards, logged as cached and counted apart; anything else goes to the
model. The model here is the embedded SmolLM2-135M (llama.cpp), the cache a real SQLite file."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from fastslow.config import load_config
from fastslow.eval.metrics import controller_usage
from fastslow.eval.records import Usage
from fastslow.eval.rundir import _foreign_files, claim_run, run_files, run_lock
from fastslow.events import EndState, EnvStep, EpisodeEnd, EpisodeStart, ListSink, ModelCall
from fastslow.models import (
    ChatModel,
    Choice,
    Completion,
    FoldSystem,
    Message,
    ModelConfig,
    Regex,
    call_model,
    make_model,
)
from fastslow.models.breaker import guard
from fastslow.models.cache import (
    CACHE_FILE,
    Answer,
    CachedModel,
    ResponseCache,
    cache_responses,
    model_identity,
    request_key,
)
from fastslow.models.constraint import Constraint
from fastslow.models.scripted import ScriptedModel

CFG = ModelConfig(max_tokens=6)
QUESTION: list[Message] = [
    {"role": "system", "content": "You answer in one word."},
    {"role": "user", "content": "What colour is the sky on a clear day?"},
]


class Counted:
    """A real model, with its calls counted (what reached it, as opposed to what the cache answered)."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.backend, self.model = inner.backend, inner.model
        self.calls = 0

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        constraint: Constraint | None = None,
    ) -> Completion:
        self.calls += 1
        return self.inner.complete(
            messages, max_tokens=max_tokens, temperature=temperature, stop=stop, constraint=constraint
        )

    def check_available(self) -> None:
        self.inner.check_available()

    def check_constraints(self) -> None:
        self.inner.check_constraints()


def cached_local(cache: ResponseCache, cfg: ModelConfig = CFG) -> tuple[ChatModel, Counted]:
    real = Counted(make_model(cfg))
    return cache_responses(real, cfg, cache), real


def test_a_repeated_temperature_0_call_is_answered_from_the_cache_and_logged_as_cached(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / CACHE_FILE)
    model, real = cached_local(cache)
    assert isinstance(model, CachedModel)
    sink = ListSink()
    first = call_model(model, QUESTION, sink=sink, role="sage_plan", step=1)
    again = call_model(model, QUESTION, sink=sink, role="sage_plan", step=2)
    assert real.calls == 1 and cache.hits == 1 and cache.stored == 1
    assert not first.cached and again.cached and again.attempts == 0
    same = ("text", "prompt_tokens", "completion_tokens", "model", "backend")
    assert [getattr(again, f) for f in same] == [getattr(first, f) for f in same]
    assert again.latency_s < first.latency_s
    sent, served = sink.events
    assert isinstance(sent, ModelCall) and isinstance(served, ModelCall)
    assert (sent.cached, served.cached, served.attempts, served.error) == (False, True, 0, None)
    assert served.completion == first.text and served.messages == sent.messages
    assert (served.prompt_tokens, served.completion_tokens) == (sent.prompt_tokens, sent.completion_tokens)
    # The same request with its defaults spelled out is the same request.
    spelled = model.complete(QUESTION, max_tokens=CFG.max_tokens, temperature=0.0, stop=[])
    assert spelled.cached and real.calls == 1
    cache.close()


def test_a_call_at_another_temperature_always_goes_to_the_model(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / CACHE_FILE)
    model, real = cached_local(cache)
    for _ in range(2):
        assert not model.complete(QUESTION, temperature=0.7).cached
    hot, hot_real = cached_local(cache, CFG.model_copy(update={"temperature": 0.7}))
    for _ in range(2):  # the configured default temperature counts too
        assert not hot.complete(QUESTION).cached
    assert (real.calls, hot_real.calls, cache.hits, cache.stored) == (2, 2, 0, 0)
    assert not (tmp_path / CACHE_FILE).exists()  # nothing cacheable: no file


def test_the_constraint_is_part_of_the_key(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / CACHE_FILE)
    model, real = cached_local(cache)
    yes_no = Choice(("yes", "no"))
    plain = model.complete(QUESTION)
    constrained = model.complete(QUESTION, constraint=yes_no)
    assert not constrained.cached and constrained.text in yes_no.options and real.calls == 2
    assert model.complete(QUESTION, constraint=Choice(["yes", "no"])).cached  # an equal constraint
    assert not model.complete(QUESTION, constraint=Regex("(yes|no)")).cached  # another one
    assert model.complete(QUESTION).text == plain.text and real.calls == 3
    identity = model_identity(real, CFG)
    key = request_key(identity, QUESTION, max_tokens=6, stop=[], constraint=yes_no)
    assert len({key, request_key(identity, QUESTION, max_tokens=6, stop=[], constraint=None)}) == 2
    # Stable across processes (no hash seed, no object identity in it).
    script = (
        "from fastslow.models import Choice; from fastslow.models.cache import request_key; "
        f"print(request_key({identity!r}, {QUESTION!r}, max_tokens=6, stop=[], "
        "constraint=Choice(('yes', 'no'))))"
    )
    env = {"PYTHONHASHSEED": "7"}
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == key


def test_the_switch_off_and_a_scripted_model_call_the_model_every_time(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / CACHE_FILE)
    off = CFG.model_copy(update={"response_cache": False})
    model, real = cached_local(cache, off)
    assert model is real
    for _ in range(2):
        assert not model.complete(QUESTION).cached
    assert real.calls == 2
    scripted = ScriptedModel(["a", "b"])
    assert cache_responses(scripted, CFG, cache) is scripted  # a sequence of replies, by design
    assert ModelConfig(response_cache=False).response_cache is False
    with pytest.raises(ValueError, match="response_cache is used only by kind openai or local"):
        ModelConfig(kind="scripted", replies=["x"], response_cache=False)
    assert "response_cache" not in ModelConfig(kind="scripted", replies=["x"]).model_dump()


def test_the_fold_stays_outermost_and_the_breaker_inside(tmp_path: Path) -> None:
    cfg = CFG.model_copy(update={"system_message": "fold"})
    built = cache_responses(guard(make_model(cfg), "sage", cfg), cfg, ResponseCache(tmp_path / CACHE_FILE))
    assert isinstance(built, FoldSystem) and isinstance(built.inner, CachedModel)
    sink = ListSink()
    for step in (1, 2):
        call_model(built, QUESTION, sink=sink, role="critic", step=step)
    logged = [e for e in sink.events if isinstance(e, ModelCall)]
    assert [e.cached for e in logged] == [False, True]
    assert logged[1].messages is not None and [m["role"] for m in logged[1].messages] == ["user"]


def test_the_cache_outlives_its_process_and_names_the_model(tmp_path: Path) -> None:
    """A resumed run opens the run's file again (another process, or the same one later): it finds
    the answers stored before, and only for the same model and settings."""
    path = tmp_path / CACHE_FILE
    before = ResponseCache(path)
    model, _ = cached_local(before)
    first = model.complete(QUESTION)
    before.close()
    after = ResponseCache(path)
    resumed, real = cached_local(after)
    again = resumed.complete(QUESTION)
    assert again.cached and again.text == first.text and real.calls == 0
    other, other_real = cached_local(after, CFG.model_copy(update={"n_ctx": 1024}))
    assert not other.complete(QUESTION).cached and other_real.calls == 1
    # Two writers of one key (two workers on one prompt): the first answer stays.
    key = request_key(model_identity(real, CFG), QUESTION, max_tokens=6, stop=[], constraint=None)
    after.put(key, Answer("something else", 1, 1, 0.1))
    assert after.get(key) == Answer(first.text, first.prompt_tokens, first.completion_tokens, first.latency_s)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    after.close()


def test_a_file_that_is_not_a_cache_is_left_alone_and_calls_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / CACHE_FILE
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE mine (x)")
    kept = path.read_bytes()
    cache = ResponseCache(path)
    model, real = cached_local(cache)
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            assert not model.complete(QUESTION).cached
    assert real.calls == 2 and path.read_bytes() == kept
    warnings = [r.getMessage() for r in caplog.records if "response cache" in r.getMessage()]
    assert len(warnings) == 1 and "not a fastslow response cache" in warnings[0]


def test_hits_are_counted_apart_in_usage() -> None:
    def call(role: str, cached: bool = False, tokens: int = 100) -> ModelCall:
        return ModelCall(
            step=1, role=role, backend="local", model="m", prompt_tokens=tokens, completion_tokens=10,
            latency_s=0.001 if cached else 2.0, attempts=0 if cached else 1, cached=cached,
        )  # fmt: skip

    start = EpisodeStart(episode_id="13-1", task_id=13, task_name="t", variation=1, split="test",
                         config_name="c", config={}, versions={})  # fmt: skip
    step = EnvStep(step=1, action="a", source="swift", observation="o", score=0, reward=0, moves=1,
                   end=EndState.STEP_LIMIT, n_valid=1, duration_ms=1.0)  # fmt: skip
    end = EpisodeEnd(end=EndState.STEP_LIMIT, final_score=0, steps=1, moves=1, wall_s=1.0)
    events = [
        start,
        call("sage_plan"),
        call("sage_plan", cached=True),
        call("critic", cached=True),
        step,
        end,
    ]
    usage = controller_usage([events])
    assert usage["model_calls"] == 1 and usage["llm_tokens_per_action"] == 110.0
    assert usage["llm_seconds_per_episode"] == 2.0 and usage["system2_calls_per_episode"] == 1.0
    assert usage["model_cache_hits"] == 2
    assert usage["model_cache_hits_by_role"] == {"critic": 1, "sage_plan": 1}
    assert usage["model_cache_hit_rate"] == round(2 / 3, 4)
    assert controller_usage([[start, step, end]])["model_cache_hit_rate"] is None
    # metrics.json reads back, and one written before the cache existed still does (zero hits)
    parsed = Usage.model_validate(usage | {"wall_s_per_episode": 1.0})
    assert parsed.model_cache_hits == 2
    old = {k: v for k, v in usage.items() if not k.startswith("model_cache")}
    assert Usage.model_validate(old | {"wall_s_per_episode": 1.0}).model_cache_hits == 0
    assert ModelCall.model_validate_json('{"event": "model_call", "t": 0, "step": 0, "role": "critic", '
                                         '"backend": "b", "model": "m"}').cached is False  # fmt: skip


def test_restart_deletes_the_cache_and_a_dir_holding_one_is_not_adopted(tmp_path: Path) -> None:
    d = tmp_path / "d"
    with run_lock(d):
        record = claim_run(d, load_config("swift-amm", ["env.step_limit=3"]), ["3-0"])
    cache = ResponseCache(d / CACHE_FILE)
    cache.put("k", Answer("look around", 3, 2, 0.5))
    listed = {p.name for p in run_files(d, record)}
    assert CACHE_FILE in listed
    cache.close()
    (d / CACHE_FILE).unlink()
    (d / CACHE_FILE).write_text("a user's notes\n")
    assert CACHE_FILE not in {p.name for p in run_files(d, record)}
    bare = tmp_path / "bare"
    bare.mkdir()
    ResponseCache(bare / CACHE_FILE).put("k", Answer("x", 1, 1, 0.1))
    assert CACHE_FILE in _foreign_files(bare)


def test_usage_fields_are_in_the_format_order() -> None:
    fields = list(Usage.model_fields)
    at = fields.index("model_calls_skipped_by_role")
    assert fields[at + 1 : at + 4] == ["model_cache_hits", "model_cache_hits_by_role", "model_cache_hit_rate"]
    assert json.loads(json.dumps(fields))[-1] == "wall_s_per_episode"
