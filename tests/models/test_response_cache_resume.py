"""A resumed run replays an unfinished episode's model calls from the run's response cache
(``DIR/model_cache.sqlite``): nothing is sent again, and every answer is the one the first attempt got,
so the replay takes the same decisions. The model is a real loopback OpenAI-compatible server whose
answers change from call to call: asked again, it would answer differently."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from loopback_servers import CannedServer, completion_json

from fastslow.events import EnvStep, Event, ModelCall, read_events
from fastslow.models.cache import CACHE_FILE

ANSWERS = ["1. look around", "1. open door to hallway", "1. teleport to kitchen", "1. inventory"]


@pytest.mark.slow
def test_a_resumed_episode_gets_its_answers_from_the_cache(
    canned: Callable[..., CannedServer], tmp_path: Path
) -> None:
    server = canned([completion_json(a) for a in ANSWERS])
    out = tmp_path / "run"
    args = ["eval", "--config", "baseline", "--set", "test", "--tasks", "13", "--limit-per-task", "1"]
    for override in (
        "sage.model.kind=openai",
        f"sage.model.base_url={server.base_url}",
        "sage.model.model=canned",
        "env.step_limit=12",
    ):
        args += ["-o", override]

    def run() -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "fastslow.cli", *args, "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr

    run()
    log = next((out / "events").glob("*.jsonl"))
    first = read_events(log)
    sent = [e for e in first if isinstance(e, ModelCall)]
    assert sent and not any(e.cached for e in sent) and server.posts == len(sent)
    assert len({e.completion for e in sent}) > 1  # the server's answers did change
    assert (out / CACHE_FILE).is_file()
    # The run stops mid-episode: the log has no episode_end, so the next start replays the episode.
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:-1]), encoding="utf-8")
    run()
    replay = read_events(log)
    served = [e for e in replay if isinstance(e, ModelCall)]
    assert server.posts == len(sent)  # nothing was sent again
    assert [e.cached for e in served] == [True] * len(sent)

    def asked(calls: list[ModelCall]) -> list[tuple[str, str | None, object]]:
        return [(e.role, e.completion, e.messages) for e in calls]

    assert asked(served) == asked(sent)

    def actions(events: list[Event]) -> list[str]:
        return [e.action for e in events if isinstance(e, EnvStep)]

    assert actions(replay) == actions(first)
    usage = json.loads((out / "metrics.json").read_text())["usage"]
    assert usage["model_cache_hits"] == len(sent) and usage["model_calls"] == 0
    assert usage["model_cache_hit_rate"] == 1.0 and usage["llm_tokens_per_action"] == 0
