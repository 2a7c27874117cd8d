"""``fastslow bench llm``'s Sage round (``models.bench.bench_sage_round``): one planning + grounding
round on Sage's real prompts, cold and with each kind of reuse side by side."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fastslow.events import ListSink, ModelCall
from fastslow.models import ModelConfig
from fastslow.models.bench import bench_sage_round, sage_rounds

ROOT = Path(__file__).resolve().parents[2]


def test_the_packaged_rounds_start_from_the_state_of_the_sage_prompt_fixtures() -> None:
    fixtures = ROOT / "tests" / "controller" / "fixtures"
    first, second = sage_rounds("authors")
    for stage in ("plan", "ground"):
        text = (fixtures / f"sage_authors_{stage}.txt").read_text(encoding="utf-8")
        assert first[stage] == [{"role": "user", "content": text}]
    assert second["plan"][0]["content"] != first["plan"][0]["content"]
    own = sage_rounds("fastslow")
    assert [m["role"] for m in own[0]["plan"]] == ["system", "user"]


def test_a_server_round_has_no_cold_or_prefix_figure_and_the_cache_answers_it() -> None:
    sink = ListSink()
    cfg = ModelConfig(kind="scripted", replies=["1. look around"], cycle=True)
    result = bench_sage_round(cfg, sink=sink)
    assert result["cold_s"] is None and result["prefix_s"] is None and result["prefix_states"] is None
    assert result["reuse_s"] >= 0 and result["cached_s"] >= 0 and result["cache_hits"] == 2
    assert result["same_answers"] is True and len(result["prompt_tokens"]) == 2
    calls = [e for e in sink.events if isinstance(e, ModelCall)]
    assert [e.cached for e in calls if e.role != "bench_warmup"] == [False] * 4 + [True] * 2


@pytest.mark.slow
def test_the_embedded_models_round_is_faster_with_prefix_states_and_the_cache() -> None:
    result = bench_sage_round(ModelConfig(), plan_max_tokens=8, ground_max_tokens=8)
    assert min(result["prompt_tokens"]) > 2000
    assert result["prefix_s"] < 0.75 * result["cold_s"]  # about half the prompt tokens; seconds vary
    assert result["cached_s"] < 0.1 and result["cache_hits"] == 2


@pytest.mark.slow
def test_the_packaged_rounds_are_what_sage_renders_now() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sage_round_fixture.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert check.returncode == 0, check.stdout + check.stderr
