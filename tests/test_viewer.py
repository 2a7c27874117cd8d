"""`fastslow view` driven in real headless Chromium over real runs made here.

Two runs, on dev episodes: the fast pathway's expert-amm-srm (Gate-1, and AMM with a store warmed up on
task 4's warm-up episodes; 30 steps at most) on the first dev variation of boil and of task 4 and on two
episodes chosen for ending at -100 (the test reads the outcomes from the logs), and +SRM with the
embedded SmolLM2 as Sage and Critic (7 steps: one Sage round on SwiftSage's shorter prompts and one
Critic call, replies capped at 16 tokens to keep the test short; the model calls are real) on the same
boil episode. The test filters to the -100 episodes, opens one, expands a Gate-1 event, opens a model
call of the LLM run, and compares the boil episode across the runs: the first-divergence marker must sit
on the first step whose actions differ in the two logs. A copy of the runs with markup written into an
observation, a prompt and a memory record checks that every text is shown as text.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastslow.config import load_config
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.eval.evaluate import evaluate
from fastslow.eval.report import write_report
from fastslow.eval.viewer import outcome as episode_outcome
from fastslow.view.browser import click, open_view, wait_for, wait_until
from fastslow.view.server import ViewerServer, serve

selenium = pytest.importorskip("selenium", reason="selenium is in the dev extra")
if shutil.which("chromedriver") is None or shutil.which("chromium") is None:
    pytest.skip("chromium + chromium-driver are missing (.ci/run installs them)", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

BOIL = "00-0014"
FAILING = select_episodes("dev", tasks="28", variations="300,301")
"""Dev episodes expert-amm-srm ended at -100 within 11 steps (the unknown substance put into a box the
task logic had not decided, by Swift); the test finds the -100 endings in the logs."""


def retrieving(events_dir: Path) -> str:
    """The first episode (by id) whose log has a memory retrieval that returned records."""
    return next(
        p.stem
        for p in sorted(events_dir.glob("*.jsonl"))
        if any(e["event"] == "memory_retrieval" and e["ids"] for e in events(p))
    )


SMALL_LLM = [
    # SwiftSage's shorter prompts (~900 and ~700 tokens against the authors' ~1,400 and ~1,200): the
    # test needs model calls in the log, not the authors' wording.
    "controller.sage.prompt=swiftsage",
    "controller.sage.history_turns=3",
    "controller.sage.max_look_chars=100",
    "controller.sage.plan_max_tokens=16",
    "controller.sage.ground_max_tokens=16",
    "controller.sage.prompt_budget_tokens=600",
    "critic.model.max_tokens=16",
    "critic.prompt_budget_tokens=600",
    "env.step_limit=7",  # a Sage round at step 6, a Critic call at step 7
]
MARKUP = '<!--<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"><b>bold</b> &amp;'


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("viewer")
    fast = root / "fast"
    evaluate(
        load_config("expert-amm-srm", ["env.step_limit=30"]),  # the first 30 steps show every mechanism
        [*select_episodes("dev", tasks="0,4", limit_per_task=1), *FAILING],
        fast,
        warmup=True,
        warmup_episodes=select_episodes("warmup", tasks="4"),
    )
    llm = root / "llm"
    evaluate(load_config("srm", SMALL_LLM), select_episodes("dev", tasks="0", limit_per_task=1), llm)
    return {"fast": fast, "llm": llm}


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    from fastslow.view.browser import chromium_driver

    d = chromium_driver()
    yield d
    d.quit()


@pytest.fixture(scope="module")
def server(runs: dict[str, Path]) -> Iterator[ViewerServer]:
    s = serve([runs["fast"], runs["llm"]])
    yield s
    s.shutdown()


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def actions(path: Path) -> list[str]:
    return [e["action"] for e in events(path) if e["event"] == "env_step"]


def test_filter_open_expand_and_compare(runs: dict[str, Path], server: ViewerServer, driver: Any) -> None:
    fast_log = runs["fast"] / "events" / f"{BOIL}.jsonl"
    open_view(driver, server.url + "#/")
    wait_for(driver, "#run-1")
    assert "memory store: sqlite" in driver.find_element(By.ID, "run-0").text

    # the episode list of the fast run, filtered to -100 episodes
    open_view(driver, server.url + "#/run/0/episodes")
    Select(wait_for(driver, "#f-outcome")).select_by_value("failure")
    logs = sorted((runs["fast"] / "events").glob("*.jsonl"))
    failed = [p.stem for p in logs if events(p)[-1]["final_score"] == -100]
    shown = f"{len(failed)} of {len(logs)} episodes"
    wait_until(lambda: shown in driver.find_element(By.ID, "count").text, what="the filtered list")
    assert "outcome=failure" in driver.current_url  # a filtered list is a link of its own
    rows = driver.find_elements(By.CSS_SELECTOR, "#episodes tr.ep")
    assert failed and [r.get_attribute("data-id") for r in rows] == failed
    assert all("-100" in r.text for r in rows)
    click(driver, rows[0])

    # the episode: jump to the -100, expand a Gate-1 event
    wait_for(driver, "#timeline tr.step")
    last = [e for e in events(runs["fast"] / "events" / f"{failed[0]}.jsonl") if e["event"] == "env_step"][-1]
    assert last["score"] == -100
    click(driver, driver.find_element(By.ID, "jump-failure"))
    assert "target" in driver.find_element(By.ID, f"step-{last['step']}").get_attribute("class")
    gate = driver.find_element(By.CSS_SELECTOR, "details.ev-gate_decision")
    click(driver, gate.find_element(By.TAG_NAME, "summary"))
    assert gate.get_attribute("open") is not None and "rule:" in gate.text
    assert driver.find_element(By.ID, "score-chart")

    # a model call of the LLM run, prompt and completion as logged
    calls = [e for e in events(runs["llm"] / "events" / f"{BOIL}.jsonl") if e["event"] == "model_call"]
    assert calls and all(c["error"] is None for c in calls)
    open_view(driver, server.url + f"#/run/1/episode/{BOIL}")
    call = wait_for(driver, "details.ev-model_call")
    click(driver, call.find_element(By.TAG_NAME, "summary"))
    prompt = call.find_elements(By.CSS_SELECTOR, "pre.prompt")[-1].text
    assert prompt.split("\n")[0] == calls[0]["messages"][-1]["content"].split("\n")[0]
    completion = call.find_element(By.CSS_SELECTOR, "pre.completion").text
    assert completion.split() == calls[0]["completion"].split()

    # the same episode in both runs: the first divergence is the first step whose actions differ
    open_view(driver, server.url + f"#/run/0/episode/{BOIL}")
    click(driver, wait_for(driver, 'a.cmp-link[href*="runs=0,1"]'))
    marker = wait_for(driver, "#first-divergence")
    a, b = actions(fast_log), actions(runs["llm"] / "events" / f"{BOIL}.jsonl")
    expected = next(k for k in range(max(len(a), len(b))) if a[k : k + 1] != b[k : k + 1]) + 1
    assert marker.get_attribute("data-step") == str(expected)
    row = driver.find_element(By.ID, f"cmp-step-{expected}")
    assert "diverge" in row.get_attribute("class")
    assert not driver.find_elements(By.CSS_SELECTOR, f"tr.diverge:not(#cmp-step-{expected})")

    # run against run: the shared episodes whose outcome or score differs, as the logs say
    open_view(driver, server.url + "#/diff/0/1")
    shared = [p.stem for p in (runs["llm"] / "events").glob("*.jsonl")]
    differ = [e for e in shared if outcome(runs["fast"], e) != outcome(runs["llm"], e)]
    count = wait_for(driver, "#diff-count").text
    assert count.startswith(f"{len(differ)} of {len(shared)} shared episodes differ")
    assert len(driver.find_elements(By.CSS_SELECTOR, "#diff tbody tr")) == len(differ)


def outcome(run: Path, episode: str) -> tuple[str, int]:
    """An episode's outcome (the list's filter value) and its score in the paper's convention."""
    rows = events(run / "events" / f"{episode}.jsonl")
    best = max([0, *(e["score"] for e in rows if e["event"] == "env_step")])
    end = rows[-1]
    return episode_outcome(end["end"], end["final_score"], best), max(best, end["final_score"], 0)


def test_the_llm_runs_system2_counters_are_its_logs(runs: dict[str, Path]) -> None:
    """metrics.json's Sage-round and Critic-answer counters (issue #30's parse rate) agree with the real
    SmolLM2 run's log (here, beside the viewer: the only run of both in the default tests)."""
    usage = json.loads((runs["llm"] / "metrics.json").read_text())["usage"]
    logged = events(runs["llm"] / "events" / f"{BOIL}.jsonl")
    rounds = [e for e in logged if e["event"] == "sage_call" and e["error"] is None]
    answers = [e for e in logged if e["event"] == "critic_call" and e["kind"] == "llm"]
    assert rounds and answers, "the 7 steps no longer hold a Sage round and a Critic call"
    assert usage["sage_rounds"] == len(rounds)
    assert usage["sage_rounds_with_actions"] == sum(bool(e["actions"]) for e in rounds)
    replied = [e for e in answers if e["error"] is None or e["error"].startswith("no ")]
    assert usage["critic_answers"] == len(replied)
    assert usage["critic_answers_with_actions"] == sum(bool(e["actions"]) for e in replied)
    acting = usage["sage_rounds_with_actions"] + usage["critic_answers_with_actions"]
    assert usage["system2_action_rate"] == round(acting / (len(rounds) + len(replied)), 4)
    latencies = sorted(e["latency_s"] for e in rounds)
    assert usage["sage_round_s_median"] == round(float(np.median(latencies)), 3) > 0


def test_memory_retrievals_show_their_records(
    runs: dict[str, Path], server: ViewerServer, driver: Any
) -> None:
    """A retrieval of the fast run (AMM's store warmed up): the records' tags and actions are shown."""
    log = runs["fast"] / "events"
    episode = retrieving(log)
    found = [e for e in events(log / f"{episode}.jsonl") if e["event"] == "memory_retrieval"]
    first = next(e for e in found if e["ids"])
    open_view(driver, server.url + f"#/run/0/episode/{episode}")
    wait_for(driver, "details.ev-memory_retrieval")
    shown = driver.find_elements(By.CSS_SELECTOR, "details.ev-memory_retrieval")
    assert len(shown) == len(found)
    retrieval = shown[found.index(first)]
    click(driver, retrieval.find_element(By.TAG_NAME, "summary"))
    with sqlite3.connect(runs["fast"] / "memory.sqlite") as db:
        (data,) = db.execute("SELECT data FROM memories WHERE id = ?", (first["ids"][0],)).fetchone()
    record = json.loads(data)
    assert f"{record['tag']}/{record['subtag']}" in retrieval.text and record["action"] in retrieval.text


@pytest.fixture(scope="module")
def marked(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A copy of both runs with MARKUP in an observation, a model prompt and a memory record."""
    root = tmp_path_factory.mktemp("marked")
    out = {name: root / name for name in runs}
    for name, path in runs.items():
        shutil.copytree(path, out[name])
    record_path = out["fast"] / "run.json"
    record = json.loads(record_path.read_text())
    record["store"]["location"] = str(out["fast"] / "memory.sqlite")
    record_path.write_text(json.dumps(record))

    def rewrite(path: Path, change: Any) -> None:
        rows = events(path)
        change(rows)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def observation(rows: list[dict[str, Any]]) -> None:
        next(r for r in rows if r["event"] == "env_step")["observation"] = MARKUP

    def prompt(rows: list[dict[str, Any]]) -> None:
        call = next(r for r in rows if r["event"] == "model_call")
        call["messages"][-1]["content"] = MARKUP + "\n" + call["messages"][-1]["content"]
        call["completion"] = MARKUP

    rewrite(out["fast"] / "events" / f"{BOIL}.jsonl", observation)
    rewrite(out["llm"] / "events" / f"{BOIL}.jsonl", prompt)
    episode = out["fast"] / "events" / f"{retrieving(out['fast'] / 'events')}.jsonl"
    first = next(e for e in events(episode) if e["event"] == "memory_retrieval" and e["ids"])
    with sqlite3.connect(out["fast"] / "memory.sqlite") as db:
        (data,) = db.execute("SELECT data FROM memories WHERE id = ?", (first["ids"][0],)).fetchone()
        changed = json.loads(data)
        changed["observation"] = MARKUP
        db.execute("UPDATE memories SET data = ? WHERE id = ?", (json.dumps(changed), first["ids"][0]))
    return out


def _shown_as_text(driver: Any, url: str, css: str) -> None:
    open_view(driver, url)
    found = wait_for(driver, css)
    for summary in driver.find_elements(By.CSS_SELECTOR, "details > summary"):
        driver.execute_script("arguments[0].parentElement.open = true", summary)
    assert MARKUP in driver.find_element(By.TAG_NAME, "body").text, css
    assert driver.execute_script("return window.__pwned === undefined")
    assert not driver.find_elements(By.CSS_SELECTOR, "#app b, #app img, #app script")
    assert found


def test_markup_from_the_logs_is_shown_as_text(marked: dict[str, Path], driver: Any) -> None:
    server = serve([marked["fast"], marked["llm"]])
    try:
        _shown_as_text(driver, server.url + f"#/run/0/episode/{BOIL}", "#step-1")
        _shown_as_text(driver, server.url + f"#/run/1/episode/{BOIL}", "details.ev-model_call")
        memory = retrieving(marked["fast"] / "events")
        _shown_as_text(driver, server.url + f"#/run/0/episode/{memory}", "details.ev-memory_retrieval")
    finally:
        server.shutdown()
    # the static page of `fastslow report` embeds the same texts: still text, and every episode shows
    page = write_report([marked["fast"], marked["llm"]], marked["fast"].parent / "report")
    html = page.read_text()
    assert "<!--<script>" not in html and "</script><img" not in html
    _shown_as_text(driver, page.as_uri() + f"#/run/1/episode/{BOIL}", "details.ev-model_call")
    _shown_as_text(driver, page.as_uri() + f"#/run/0/episode/{BOIL}", "#step-1")
    open_view(driver, page.as_uri() + "#/run/0/episodes")
    listed = wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "#episodes tr.ep"))
    assert len(listed) == len(list((marked["fast"] / "events").glob("*.jsonl")))


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An oracle run of three short dev episodes with a corrupted middle line in one log (13-0004) and
    another log (17-0062) cut to half its size."""
    out = tmp_path_factory.mktemp("damaged") / "oracle"
    evaluate(load_config("oracle"), select_episodes("dev", tasks="7,13,17", limit_per_task=1), out)
    log = out / "events" / "13-0004.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[len(lines) // 2] = '{"event": "env_step", garbage\n'
    log.write_text("".join(lines))
    cut = out / "events" / "17-0062.jsonl"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    return out


def test_an_unreadable_log_is_marked_in_the_list(damaged: Path, driver: Any) -> None:
    server = serve([damaged])
    try:
        open_view(driver, server.url + "#/run/0/episodes")
        rows = {
            r.get_attribute("data-id"): r for r in driver.find_elements(By.CSS_SELECTOR, "#episodes tr.ep")
        }
        assert sorted(rows) == ["07-0150", "13-0004", "17-0062"]  # every log listed, the intact one too
        for bad, why in (("13-0004", "is not a valid event"), ("17-0062", "cut off")):
            assert "problem" in rows[bad].get_attribute("class")
            assert "unreadable" in rows[bad].text and why in rows[bad].text
        assert "problem" not in rows["07-0150"].get_attribute("class") and "success" in rows["07-0150"].text
        warning = driver.find_element(By.ID, "problems").text
        assert "2 event logs cannot be shown whole" in warning and "13-0004" in warning
        Select(wait_for(driver, "#f-outcome")).select_by_value("unreadable")
        wait_until(lambda: "2 of 3 episodes" in driver.find_element(By.ID, "count").text, what="the filter")

        # opening the corrupt one shows the server's reason; the cut one shows the steps it holds
        open_view(driver, server.url + "#/run/0/episode/13-0004")
        assert "13-0004.jsonl line" in wait_for(driver, "#app p.warn").text
        open_view(driver, server.url + "#/run/0/episode/17-0062")
        assert "cut off" in wait_for(driver, "#problem").text
        open_view(driver, server.url + "#/run/0/episode/07-0150")
        assert wait_for(driver, "#timeline tr.step") and not driver.find_elements(By.ID, "problem")
    finally:
        server.shutdown()
